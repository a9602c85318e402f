"""File-system faults in real CLI processes: a file-size limit, a full disk, paths too long, a
read-only file system, an EDGEDEPLOY_HOME that is a file or a symbolic-link loop.

Each case runs `python -m edgedeploy` as a user would and checks: the exit code of the error's
class (11 for an output, 9 for the toolchains' home), exactly one `error:` sentence naming the
path, no traceback and no "internal error", and nothing partial left (no artifact, no
`.building-*` or `.failed` folder, not even the OUT/<model> folder the build made).

The full disk and the read-only disk are real tmpfs mounts in a private mount namespace
(`unshare -m`, or `unshare -rm` for a user without root); where neither works the case is
skipped, saying so, rather than faked.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from edgedeploy.fs_errors import short_path
from edgedeploy.sample import sample_model_path

pytestmark = pytest.mark.slow

EXIT_TOOLCHAIN, EXIT_ARTIFACT = 9, 11


def _cli(*args: str, env_extra: dict | None = None, fsize_kb: int | None = None, cwd=None):
    env = dict(os.environ, **(env_extra or {}))

    def limit():
        # The shell's `ulimit -f`: past it a write fails with EFBIG (SIGXFSZ ignored, as Python does).
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_kb * 1024, fsize_kb * 1024))

    return subprocess.run(
        [sys.executable, "-m", "edgedeploy", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
        preexec_fn=limit if fsize_kb else None,
    )


def _assert_one_sentence(result, code: int, path: object) -> str:
    assert result.returncode == code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    line = errors[0]
    assert short_path(path) in line, line
    assert line.endswith(".") and line.count(". ") == 0, line
    return line


def _assert_nothing_left(out: Path) -> None:
    left = [str(p) for p in out.rglob("*")] if out.exists() else []
    assert not left, left


@pytest.mark.toolchain("espdl")
def test_file_size_limit_during_a_build(tmp_path):
    out = tmp_path / "out"
    result = _cli("build", "--target", "esp32s3", "--out", str(out), fsize_kb=50)
    line = _assert_one_sentence(result, EXIT_ARTIFACT, out / "mnist_cnn" / "esp32s3")
    assert "ulimit -f" in line
    _assert_nothing_left(out)


@pytest.mark.toolchain("espdl")
def test_output_path_longer_than_the_system_takes(tmp_path):
    # Every name within NAME_MAX, the whole path past PATH_MAX (4096) once the artifact's folders are added.
    out = tmp_path / "out" / "/".join(["d" * 200] * 20)
    result = _cli("build", "--target", "esp32s3", "--out", str(out))
    line = _assert_one_sentence(result, EXIT_ARTIFACT, out / "mnist_cnn" / "esp32s3")
    assert "too long" in line and len(line) < 600
    _assert_nothing_left(tmp_path / "out")


def test_output_name_longer_than_name_max(tmp_path):
    out = tmp_path / ("n" * 300)
    result = _cli("build", "--target", "esp32s3", "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "255 bytes" in result.stderr
    assert list(tmp_path.iterdir()) == []


def _as_an_unprivileged_user() -> list[str]:
    """The prefix that runs a command as `nobody` when the tests run as root (root may write
    anywhere, so it never meets EACCES); nothing for another user."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: no unprivileged user to meet a permission error")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.parametrize("command", [["sample", "-o"], ["audit", "--target", "esp32s3", "-o"]], ids=["sample", "audit"])
def test_an_output_folder_without_write_permission(tmp_path, command):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    os.chmod(tmp_path, 0o755)  # pytest's folders are 0700: the unprivileged user must reach `locked`
    model = [] if command[0] == "sample" else [str(sample_model_path())]
    out = locked / ("x" if command[0] == "sample" else "audit.md")
    result = subprocess.run(
        [*_as_an_unprivileged_user(), sys.executable, "-m", "edgedeploy", *command[:1], *model, *command[1:], str(out)],
        capture_output=True, text=True, timeout=120,
    )
    line = _assert_one_sentence(result, EXIT_ARTIFACT, out if command[0] == "sample" else locked)
    assert "permission is denied" in line
    assert list(locked.iterdir()) == []


def _home_cases(tmp_path: Path) -> dict[str, Path]:
    as_file = tmp_path / "home-file"
    as_file.write_text("not a folder\n")
    loop_a, loop_b = tmp_path / "loop-a", tmp_path / "loop-b"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    return {"a file": as_file, "a symlink loop": loop_a}


@pytest.mark.parametrize("case", ["a file", "a symlink loop"])
@pytest.mark.parametrize("command", [("toolchain", "install", "espdl"), ("build", "--target", "esp32s3"), ("toolchain", "doctor", "espdl")])
def test_edgedeploy_home_that_cannot_hold_environments(tmp_path, case, command):
    home = _home_cases(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    args = (*command, "--out", str(tmp_path / "out")) if command[0] == "build" else command
    result = _cli(*args, env_extra={"EDGEDEPLOY_HOME": str(home)})
    line = _assert_one_sentence(result, EXIT_TOOLCHAIN, home)
    assert "EDGEDEPLOY_HOME" in line and "not installed" not in line
    assert ("is a file" in line) if case == "a file" else ("loop" in line)
    # Nothing made or removed: the file is still a file, the links still links, no output.
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if case == "a file":
        assert home.read_text() == "not a folder\n"


def _build_in_mount(tmp_path: Path, options: str, target: str):
    """A build with OUT on a fresh tmpfs (mount options `options`), in a private mount namespace.

    The mount lives only as long as the namespace, so the shell inside it lists what the build
    left there before it ends. Returns (exit code, stderr, what is left on the mount)."""
    if not shutil.which("unshare"):
        pytest.skip("unshare is not on this machine: no private tmpfs mount")
    mnt, err = tmp_path / "mnt", tmp_path / "stderr.txt"
    mnt.mkdir()
    script = (
        'mount -t tmpfs -o "$1" tmpfs "$2" || exit 97; "$3" -m edgedeploy build --target "$4" --out "$2/out" 2>"$5"; '
        'echo "rc=$?"; find "$2" -mindepth 1'
    )
    args = ["sh", "-c", script, "sh", options, str(mnt), sys.executable, target, str(err)]
    for unshare in (["unshare", "-m"], ["unshare", "-rm"]):
        result = subprocess.run([*unshare, *args], capture_output=True, text=True, timeout=300)
        if result.stdout.startswith("rc="):
            first, *left = result.stdout.splitlines()
            return int(first[3:]), err.read_text(), left
    pytest.skip(f"cannot mount a tmpfs here (neither unshare -m nor -rm): {result.stderr.strip()[:200]}")


class _Result:
    def __init__(self, returncode: int, stderr: str):
        self.returncode, self.stderr = returncode, stderr


@pytest.mark.parametrize(
    "size, chip",
    [
        pytest.param("size=1m", "rk3588", marks=pytest.mark.toolchain("rknn"), id="rk3588"),
        pytest.param("size=300k", "esp32s3", marks=pytest.mark.toolchain("espdl"), id="esp32s3"),
    ],
)
def test_full_disk_while_building(tmp_path, size, chip):
    code, stderr, left = _build_in_mount(tmp_path, size, chip)
    line = _assert_one_sentence(_Result(code, stderr), EXIT_ARTIFACT, tmp_path / "mnt" / "out" / "mnist_cnn" / chip)
    assert "no space" in line
    assert left == [], left


@pytest.mark.toolchain("espdl")
def test_read_only_file_system(tmp_path):
    code, stderr, left = _build_in_mount(tmp_path, "ro,size=1m", "esp32s3")
    line = _assert_one_sentence(_Result(code, stderr), EXIT_ARTIFACT, tmp_path / "mnt" / "out")
    assert "read-only" in line
    assert left == [], left


def test_the_class_follows_the_path():
    """Under EDGEDEPLOY_HOME a file-system error is the toolchains' (9), elsewhere an output's (11);
    any other OSError is left to the internal-error handler (a bug)."""
    import errno

    from edgedeploy.fs_errors import file_system_error

    home = Path("/srv/edgedeploy-home")
    full = OSError(errno.ENOSPC, "No space left on device", str(home / "envs" / "espdl" / "lib"))
    assert file_system_error(full, home=home).exit_code == EXIT_TOOLCHAIN
    assert "EDGEDEPLOY_HOME" in str(file_system_error(full, home=home))
    assert file_system_error(full, home=Path("/elsewhere")).exit_code == EXIT_ARTIFACT
    assert file_system_error(OSError(errno.EIO, "Input/output error", "/x"), home=home) is None
    assert file_system_error(ValueError("not an OSError")) is None


# -- inside a toolchain worker: the file system's refusal reaches the user as the core's own ------


def _run_worker_source(tmp_path: Path, body: str):
    """Run a worker (this interpreter as its environment) through the executor's one worker path."""
    import textwrap

    from edgedeploy.toolchains.executor import Executor

    worker = tmp_path / "worker_fs.py"
    worker.write_text(textwrap.dedent(body))
    return Executor(tmp_path / "log.txt", 60).run_worker(Path(sys.executable), worker, {}, tmp_path / "w", label="test")


def test_a_worker_on_a_full_disk_is_a_file_system_error_not_a_toolchain_failure(tmp_path):
    # /dev/full: every write is refused with ENOSPC, as a full disk would.
    with pytest.raises(OSError) as info:
        _run_worker_source(tmp_path, "def run(request, ctx):\n    with open('/dev/full', 'wb') as fh:\n        fh.write(b'x' * 10)\n")
    assert info.value.errno == errno.ENOSPC


# The worker limits its own file size (`ulimit -f`, SIGXFSZ ignored as Python does), then writes.
_LIMITED_WORKER = """
import os, resource, signal
def run(request, ctx):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
    {then}
"""


@pytest.mark.parametrize(
    "limit, then, result_file",
    [
        # Past a 4 KB limit in its own file: the result (small) still says errno EFBIG.
        (4096, "fh = open(os.path.join(ctx.workdir, 'weights.bin'), 'wb'); fh.write(b'x' * 8192); fh.close()", False),
        # A limit of 0 bytes: its log line and its result file both fail, so only its exit status
        # (worker_main's OS_ERROR_EXIT_BASE + errno) can carry the cause; the result file is named.
        (0, "return {'done': True}", True),
    ],
    ids=["own-file", "result-file"],
)
def test_a_worker_past_the_file_size_limit_is_a_file_system_error(tmp_path, limit, then, result_file):
    with pytest.raises(OSError) as info:
        _run_worker_source(tmp_path, _LIMITED_WORKER.format(limit=limit, then=then))
    assert info.value.errno == errno.EFBIG
    if result_file:
        assert info.value.filename == str(tmp_path / "w" / "result.json")


def test_a_worker_error_with_another_errno_stays_a_toolchain_failure(tmp_path):
    from edgedeploy.errors import WorkerFailed

    with pytest.raises(WorkerFailed) as info:
        _run_worker_source(tmp_path, "def run(request, ctx):\n    raise ConnectionResetError(104, 'Connection reset by peer')\n")
    assert "Connection reset by peer" in str(info.value)
