"""A vendor SDK the user installs into a Python of their own: how a target declares one.

Most vendor SDKs arrive so (a compiler wheel from the vendor's portal, behind a licence), not from
PyPI, so edgedeploy cannot install them. The target names the modules the SDK imports and its
lowest version; the user points edgedeploy at their interpreter with `EDGEDEPLOY_<NAME>_PYTHON`
or `python = ...` under `[toolchains.<name>]` in ./edgedeploy.toml (toolchains.kinds.UserPython,
which checks the import and the version once, before the first worker runs there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from edgedeploy.errors import EdgedeployError
from edgedeploy.toolchains.environments import Toolchain, ToolchainStatus


@dataclass(frozen=True, eq=False)
class UserPythonToolchain(Toolchain):
    """A toolchain whose workers run in a Python the user installed the SDK into.

    `import_modules` must import there; `minimum_version` is (distribution, lowest version), or
    None. `name` is also the target id that `EDGEDEPLOY_<NAME>_PYTHON` is spelled from.
    """

    name: str
    description: str
    import_modules: tuple[str, ...]
    minimum_version: tuple[str, str] | None = None
    managed: bool = False

    @property
    def variable(self) -> str:
        """The environment variable that names the interpreter."""
        return f"EDGEDEPLOY_{re.sub(r'[^A-Za-z0-9]', '_', self.name).upper()}_PYTHON"

    def status(self, home: Path | None = None) -> ToolchainStatus:
        """Whether an interpreter is configured (read from the environment and the project file;
        nothing is run: the SDK's import and version are checked when a worker first needs it)."""
        from edgedeploy.toolchains.kinds import configured_environment

        try:
            environment = configured_environment(self, self.name, required=False)
        except EdgedeployError as exc:
            return ToolchainStatus(self.name, False, str(exc))
        if environment is None:
            return ToolchainStatus(self.name, False, f"not configured: set ${self.variable} to the Python you installed it into, or python = ... under [toolchains.{self.name}] in edgedeploy.toml")
        needs = f"{', '.join(self.import_modules)}" + (f" ({self.minimum_version[0]} >= {self.minimum_version[1]})" if self.minimum_version else "")
        return ToolchainStatus(self.name, True, f"{environment.describe()}; checked for {needs} before it is used")
