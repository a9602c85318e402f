"""The TOML parser this Python has, for the project file and the device inventory.

Python 3.11 ships tomllib; on 3.10 the same parser is the `tomli` backport. Each caller says in
its own words what it could not read when neither is there.
"""

from __future__ import annotations

from types import ModuleType

from edgedeploy.interrupts import reraise_if_interrupted


def toml_module() -> ModuleType | None:
    """tomllib (Python 3.11+) or tomli (the backport, same API); None when neither is installed."""
    try:
        import tomllib  # Python 3.11+

        return tomllib
    except ImportError as exc:
        reraise_if_interrupted(exc)
        try:
            import tomli  # type: ignore[import-not-found]

            return tomli
        except ImportError as exc:
            reraise_if_interrupted(exc)
            return None
