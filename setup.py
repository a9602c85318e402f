"""Package discovery for the folder layout of the design card.

pyproject.toml maps the import names onto the repository folders (`edgedeploy` -> toolkit/,
`edgedeploy.targets` -> targets/, `edgedeploy.templates` -> templates/, `edgedeploy.firmware` ->
firmware/). setuptools' own finder cannot follow such a mapping, so the packages are listed here
by walking the folders: adding a target is adding a package under targets/, nothing else.
"""

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent

# import name -> folder; code packages are found by their __init__.py files.
CODE_ROOTS = {"edgedeploy": "toolkit", "edgedeploy.targets": "targets"}
# import name -> folder; everything below ships verbatim as package data.
DATA_ROOTS = {"edgedeploy.templates": "templates", "edgedeploy.firmware": "firmware"}

# Non-Python files that code packages carry: requirement pins, sample model and data, JSON tables.
CODE_PACKAGE_DATA = ["*.txt", "*.json", "*.onnx", "*.npz", "*.md", "*.j2", "*.ini", "*.yml"]


def _packages_below(import_name: str, folder: str) -> list[str]:
    root = HERE / folder
    found = [import_name]
    for init in sorted(root.rglob("__init__.py")):
        parts = init.parent.relative_to(root).parts
        if parts and "__pycache__" not in parts:
            found.append(".".join((import_name, *parts)))
    return found


packages: list[str] = []
for name, folder in CODE_ROOTS.items():
    packages += _packages_below(name, folder)
packages += list(DATA_ROOTS)

package_data = {pkg: CODE_PACKAGE_DATA for pkg in packages if pkg not in DATA_ROOTS}
package_data.update({pkg: ["**/*"] for pkg in DATA_ROOTS})
package_data["edgedeploy"] = CODE_PACKAGE_DATA + ["data/**/*"]
# The latency estimator's calibration tables (published device figures, the rebuilt models' manifest).
package_data["edgedeploy.estimate"] = CODE_PACKAGE_DATA + ["data/*.csv", "data/*.json"]

setup(packages=packages, package_data=package_data)
