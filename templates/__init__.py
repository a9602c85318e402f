"""Package data: templates shipped with edgedeploy (this file only makes the folder importable for importlib.resources)."""
