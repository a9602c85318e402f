"""Run import-linter on edgedeploy's layers (the contracts in pyproject.toml [tool.importlinter]).

The repository keeps the design card's folders (toolkit/ is `edgedeploy`, targets/ is
`edgedeploy.targets`), but grimp, import-linter's graph builder, reads one folder per root
package. So this stages the installed layout — a copy of the Python files only, toolkit/ as
edgedeploy/ with targets/ inside it — in a temporary folder and runs `lint-imports` there with
the project's own configuration. Exit status: lint-imports' own (0 when every contract holds).

    python scripts/lint_imports.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def stage(dest: Path) -> Path:
    """Copy toolkit/**.py to dest/edgedeploy/ and targets/**.py to dest/edgedeploy/targets/."""
    package = dest / "edgedeploy"
    for source, target in ((ROOT / "toolkit", package), (ROOT / "targets", package / "targets")):
        for path in source.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            out = target / path.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
    shutil.copyfile(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def main() -> int:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        print("lint_imports: import-linter is not installed in this environment (pip install -e '.[test]')", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="edgedeploy-lint-") as tmp:
        staged = stage(Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(staged))
        done = subprocess.run([str(lint), "--no-cache", str(staged / "pyproject.toml")], cwd=staged, env=env, capture_output=True, text=True)
    # The banner is decoration; the contract lines and any broken imports are the result.
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip() and not line.lstrip().startswith(("╔", "╚", "║", "└"))]
    print("\n".join(lines))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
