"""edgedeploy: one ONNX model in; for each target chip, the fallback audit, the vendor
toolchain's conversion, deployable code, and before/after measurements.

This package (the repository folder toolkit/) is the vendor-neutral core. It never imports a
vendor SDK: toolchains run in their own virtual environments as worker subprocesses.
"""

__version__ = "0.1.0"
