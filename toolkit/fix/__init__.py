"""`edgedeploy fix`: graph rewrites that keep operators on the accelerator, with fidelity checked.

passes.py holds the rewrite library; graph.py the graph editing helpers.
"""
