"""A worker that checks a toolchain environment: imports its modules and reports versions.

Used by `edgedeploy toolchain doctor` and by `install` to verify an environment, and by the
tests to round-trip a request through a real environment. Standard library only (plus whatever
modules the request asks it to import).
"""

import importlib
import importlib.metadata
import platform


def run(request: dict, ctx) -> dict:
    imported = {}
    for module_name in request.get("modules", []):
        ctx.log(f"importing {module_name}")
        module = importlib.import_module(module_name)
        imported[module_name] = getattr(module, "__file__", None) or "(built-in)"
    versions = {}
    for dist in request.get("distributions", []):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "python": platform.python_version(),
        "imported": imported,
        "versions": versions,
        "echo": request.get("echo"),
    }
