"""Creating, checking and describing toolchain environments."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgedeploy.errors import ToolchainError, ToolchainMissing
from edgedeploy.fs_errors import check_home, check_home_writable
from edgedeploy.locks import LOCK_NAME, LockBusy, held
from edgedeploy.toolchains.process import ManagedProcess, ProcessTimedOut

# Where an environment records what it was built from; its absence marks an incomplete install.
STAMP_NAME = "edgedeploy-toolchain.json"
# A pip step that prints nothing for this long is still normal (large wheels); only the whole
# install has a limit, generous enough for a slow mirror.
INSTALL_TIMEOUT_S = 3600
DOCTOR_TIMEOUT_S = 300


def edgedeploy_home() -> Path:
    """$EDGEDEPLOY_HOME, else the user's cache directory ($XDG_CACHE_HOME or ~/.cache) /edgedeploy.

    Checked before use: a file or a link loop there is one sentence saying so (exit 9), not
    "not installed, run install", which cannot help."""
    home = home_path()
    check_home(home)
    return home


def home_path() -> Path:
    """Where EDGEDEPLOY_HOME points, unchecked (for naming it, and for telling whether a path lies under it)."""
    env = os.environ.get("EDGEDEPLOY_HOME")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "edgedeploy"


@dataclass(frozen=True)
class ToolchainStatus:
    """Whether a toolchain can be used here, in one line a user understands."""

    name: str
    installed: bool
    detail: str
    versions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RequirementStep:
    """One `pip install` run: a pinned requirements file, optionally with `--no-deps`.

    Several steps exist because some toolchains only install with pip's resolver bypassed for
    one package (rknn-toolkit2 declares pins that conflict with a working torch).
    """

    requirements_file: Path
    no_deps: bool = False

    def describe(self) -> str:
        return f"pip install {'--no-deps ' if self.no_deps else ''}-r {self.requirements_file.name}"


class Toolchain:
    """Common interface of managed and external toolchains."""

    name: str
    description: str
    managed: bool

    def status(self, home: Path | None = None) -> ToolchainStatus:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class VenvToolchain(Toolchain):
    """A toolchain edgedeploy installs into its own venv from pinned requirement files.

    `import_modules` are imported by `doctor` to prove the environment works; `distributions`
    are the packages whose versions are recorded in manifests and shown by `doctor`.
    """

    name: str
    description: str
    steps: tuple[RequirementStep, ...]
    import_modules: tuple[str, ...]
    distributions: tuple[str, ...]
    managed: bool = True

    def env_dir(self, home: Path | None = None) -> Path:
        return (home or edgedeploy_home()) / "envs" / self.name

    def python(self, home: Path | None = None) -> Path:
        return self.env_dir(home) / "bin" / "python"

    def spec_hash(self) -> str:
        """Hash of the pinned requirements: an environment built from other pins is rebuilt."""
        digest = hashlib.sha256()
        for step in self.steps:
            digest.update(step.describe().encode())
            digest.update(step.requirements_file.read_bytes())
        return digest.hexdigest()[:16]

    def read_stamp(self, home: Path | None = None) -> dict | None:
        path = self.env_dir(home) / STAMP_NAME
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def install_problem(self, home: Path | None = None) -> tuple[str, str] | None:
        """What is wrong with the install as found on disk, without running it: (state, why), or
        None. `status` and `toolchain doctor` both start from it (doctor then runs the environment)."""
        stamp = self.read_stamp(home)
        env = self.env_dir(home)
        if stamp is None and not env.exists():
            return "not installed", "not installed"
        if stamp is None:
            return "incomplete", f"incomplete install in {env} (no {STAMP_NAME}: an install was interrupted or failed)"
        if not self.python(home).exists():
            return "broken", f"its interpreter {self.python(home)} is missing"
        if stamp.get("spec_hash") != self.spec_hash():
            return "outdated", "built from other pins than this edgedeploy's requirement files"
        return None

    def status(self, home: Path | None = None) -> ToolchainStatus:
        problem = self.install_problem(home)
        if problem is None:
            return ToolchainStatus(self.name, True, f"installed in {self.env_dir(home)}", (self.read_stamp(home) or {}).get("versions", {}))
        state, why = problem
        # A broken environment is rebuilt from scratch (--force); the others install over what is there.
        remedy = self.repair_command() if state == "broken" else f"edgedeploy toolchain install {self.name}"
        versions = (self.read_stamp(home) or {}).get("versions", {}) if state == "outdated" else {}
        said = why if why.startswith(state) else f"{state}: {why}"
        return ToolchainStatus(self.name, False, f"{said}; run `{remedy}`", versions)

    def repair_command(self) -> str:
        """The one command that rebuilds this environment from its pins, whatever is wrong with it."""
        return f"edgedeploy toolchain install {self.name} --force"

    def doctor_log(self, home: Path | None = None) -> Path:
        """Where `doctor` writes its check of this environment; beside the install log, and kept."""
        return self.env_dir(home).parent / f"{self.name}-doctor.log"

    def pinned_versions(self) -> dict[str, str]:
        """The `name==version` pins of the requirement files, by normalised distribution name."""
        pins: dict[str, str] = {}
        for step in self.steps:
            for line in step.requirements_file.read_text().splitlines():
                spec = line.split("#", 1)[0].split(";", 1)[0].strip()
                if "==" in spec and not spec.startswith("-"):
                    name, version = spec.split("==", 1)
                    pins[_normalise_name(name.split("[", 1)[0])] = version.strip()
        return pins

    def version_mismatches(self, versions: dict) -> list[str]:
        """Each recorded distribution whose installed version is not its pin, as 'NAME X installed, Y pinned'."""
        pins = self.pinned_versions()
        wrong = []
        for dist in self.distributions:
            pin = pins.get(_normalise_name(dist))
            found = versions.get(dist)
            # A local label (torch's "+cpu") names the build, not the release the pin asks for.
            if pin is not None and (found is None or str(found).split("+", 1)[0] != pin.split("+", 1)[0]):
                wrong.append(f"{dist} {found or 'missing'} installed, {pin} pinned")
        return wrong

    def require(self, home: Path | None = None) -> Path:
        """The environment's interpreter; ToolchainMissing with the fix if it is not usable."""
        st = self.status(home)
        if not st.installed:
            raise ToolchainMissing(f"The {self.name} toolchain is {st.detail}.")
        return self.python(home)

    def worker_environment(self, home: Path | None = None):
        """The environment kind its workers run in: its managed venv (toolchains.kinds.ManagedVenv)."""
        from edgedeploy.toolchains.kinds import ManagedVenv

        return ManagedVenv(toolchain=self, home=home)

    def install(
        self,
        home: Path | None = None,
        force: bool = False,
        echo: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
        wait: bool = True,
    ) -> ToolchainStatus:
        """Create or update the environment; a no-op when it is already built from the same pins.

        pip runs with the user's own configuration and environment (PIP_INDEX_URL, pip.conf,
        constraints), so mirrors and local wheel folders keep working; no index is hard-coded.
        The environment's lock is held throughout: another install, or a build using the
        environment, makes this one wait (or, without `wait`, refuse, naming the process).
        """
        home = home or edgedeploy_home()
        # Before anything is removed or made: a home this user cannot write fails now, in one sentence.
        check_home_writable(home)
        st = self.status(home)
        if st.installed and not force:
            # Nothing to change, so nothing to wait for (a build may hold the environment for minutes).
            return self._already_installed(home, st, echo)
        env = self.env_dir(home)
        env.parent.mkdir(parents=True, exist_ok=True)
        try:
            with held(self.lock_path(home), wait=wait, on_wait=lambda who: echo(f"{self.name}: waiting for {who}, which is installing this toolchain or building with it")):
                return self._install_locked(home, force, echo)
        except LockBusy as busy:
            raise ToolchainError(f"The {self.name} environment is in use by {busy.holders}; wait for it to finish, or install without --no-wait to wait for it.") from None

    def _install_locked(self, home: Path, force: bool, echo: Callable[[str], None]) -> ToolchainStatus:
        from edgedeploy.toolchains.worker import run_probe

        # Read under the lock: an install that held it may just have built this environment.
        st = self.status(home)
        if st.installed and not force:
            return self._already_installed(home, st, echo)
        env = self.env_dir(home)
        if env.exists():
            echo(f"{self.name}: removing the previous environment {env}")
            shutil.rmtree(env)
        log_path = env.parent / f"{self.name}-install.log"
        total = len(self.steps) + 2
        started = time.monotonic()
        with log_path.open("w") as log:
            echo(f"[1/{total}] {self.name}: creating a virtual environment in {env}")
            _run_logged([_base_python(), "-m", "venv", str(env)], log, echo, label="venv")
            for index, step in enumerate(self.steps, start=2):
                echo(f"[{index}/{total}] {self.name}: {step.describe()}")
                cmd = [str(self.python(home)), "-m", "pip", "install", "--disable-pip-version-check"]
                if step.no_deps:
                    cmd.append("--no-deps")
                cmd += ["-r", str(step.requirements_file)]
                _run_logged(cmd, log, echo, label=step.describe())
        echo(f"[{total}/{total}] {self.name}: checking that the toolchain imports")
        probe = run_probe(self, home, workdir=env.parent / f".{self.name}-probe")
        stamp = {
            "name": self.name,
            "spec_hash": self.spec_hash(),
            "versions": probe["versions"],
            "python": probe["python"],
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "install_seconds": round(time.monotonic() - started, 1),
        }
        (env / STAMP_NAME).write_text(json.dumps(stamp, indent=2))
        echo(f"{self.name}: installed in {time.monotonic() - started:.0f} s: " + ", ".join(f"{k} {v}" for k, v in probe["versions"].items()))
        return self.status(home)

    def _already_installed(self, home: Path, st: ToolchainStatus, echo: Callable[[str], None]) -> ToolchainStatus:
        echo(f"{self.name}: already installed ({self.env_dir(home)}); nothing to do (use --force to rebuild).")
        return st

    def in_use(self, home: Path | None = None, on_wait: Callable[[str], None] | None = None):
        """The environment's lock, shared, for a build or a worker run that uses it: an install
        of it (`--force` included) waits until the block ends, and the block waits for one."""
        return held(self.lock_path(home), shared=True, on_wait=on_wait, optional=True)

    def lock_path(self, home: Path | None = None) -> Path:
        """The environment's lock file: in the home's locks/ folder, so that envs/ holds environments only."""
        return (home or edgedeploy_home()) / "locks" / f"{self.name}{LOCK_NAME}"


@dataclass(frozen=True, eq=False)
class ExternalToolchain(Toolchain):
    """A toolchain the user installs (TensorRT, TI's tools); `detect` says whether it is here."""

    name: str
    description: str
    detect: Callable[[], ToolchainStatus]
    managed: bool = False

    def status(self, home: Path | None = None) -> ToolchainStatus:
        return self.detect()


def _normalise_name(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503): case and the runs of -_. do not matter."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _base_python() -> str:
    """The interpreter to create venvs from: the one running edgedeploy (a venv's base is used by venv itself)."""
    return sys.executable


def _run_logged(cmd: list[str], log, echo: Callable[[str], None], label: str) -> None:
    """Run a command, copying its output to the install log and, line by line, to the user."""
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    env = dict(os.environ)
    # The new environment must not see edgedeploy's own venv or site-packages.
    for var in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(var, None)
    tail: list[str] = []
    with ManagedProcess(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, bufsize=1) as proc:
        assert proc.proc is not None and proc.proc.stdout is not None
        for line in proc.proc.stdout:
            log.write(line)
            tail = (tail + [line.rstrip()])[-15:]
            stripped = line.strip()
            # Pass pip's progress lines through; the path warnings of local indexes are noise.
            if stripped and not stripped.startswith("WARNING: Location"):
                echo("    " + stripped)
        try:
            rc = proc.wait(INSTALL_TIMEOUT_S)
        except ProcessTimedOut:
            raise ToolchainError(f"{label} did not finish within {INSTALL_TIMEOUT_S} s; see {log.name}.") from None
    log.flush()
    if rc != 0:
        raise ToolchainError(
            f"{label} failed (exit {rc}); see {log.name}. Last lines:\n" + "\n".join("    " + t for t in tail)
        )
