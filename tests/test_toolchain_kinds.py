"""The environment kinds behind the executor's one worker path, and what every kind shares.

Each kind runs the same worker (this file's WORKER) through Executor.run_worker: a user-supplied
Python (checked for the SDK's import and version first), an external command standing for the
interpreter (a small wrapper script), and a Python over SSH (the loopback sshd the suite starts
for its SSH tests). Every kind gets the one array helper beside worker_main (ctx.arrays), the
one time-out and process-group kill, and the one failure: a ToolchainFailed with fields.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from edgedeploy.arrays import read_arrays, write_arrays
from edgedeploy.devices import open_transport
from edgedeploy.errors import ConfigError, ToolchainFailed, ToolchainMissing
from edgedeploy.toolchains import ExternalCommand, RemoteSsh, UserPython, configured_environment
from edgedeploy.toolchains.environments import ExternalToolchain, ToolchainStatus
from edgedeploy.toolchains.executor import Executor

# Doubles the arrays of request["inputs"] into request["outputs"] with the shared array helper,
# and says which interpreter ran it and under which parent command.
WORKER = """
import os, sys
def run(request, ctx):
    arrays = ctx.arrays.read_arrays(request["inputs"])
    ctx.arrays.write_arrays(request["outputs"], {name: 2 * value for name, value in arrays.items()})
    if request.get("sleep"):
        import subprocess, time
        child = subprocess.Popen(["sleep", "300"])
        open(request["child_pid"], "w").write(str(child.pid))
        time.sleep(request["sleep"])
    return {"outputs": request["outputs"], "python": sys.executable, "wrapped": os.environ.get("WRAPPED_BY", "")}
"""

FAILING_WORKER = """
def failure_context(exc):
    return {"node": "/conv/Conv", "op_type": "Conv", "where": "the_toolchain.quantise"}
def run(request, ctx):
    raise ValueError("cannot quantise this layer")
"""


def _worker(tmp_path: Path, body: str = WORKER) -> Path:
    path = tmp_path / "worker_kind_test.py"
    path.write_text(textwrap.dedent(body))
    return path


def _request(tmp_path: Path, **extra) -> dict:
    inputs = write_arrays(tmp_path / "in.npz", {"x:0": np.arange(6, dtype=np.float32).reshape(2, 3), "name with spaces": np.ones(2)})
    return {"inputs": str(inputs), "outputs": str(tmp_path / "out.npz"), **extra}


def _check_doubled(tmp_path: Path, result: dict) -> None:
    out = read_arrays(Path(result["outputs"]))
    assert Path(result["outputs"]) == tmp_path / "out.npz"  # a local path, whatever the kind
    assert np.array_equal(out["x:0"], 2 * np.arange(6, dtype=np.float32).reshape(2, 3)) and np.array_equal(out["name with spaces"], [2.0, 2.0])


def _wrapper(tmp_path: Path) -> Path:
    """An external command standing for the interpreter: a script that marks the environment and execs Python."""
    script = tmp_path / "sdk-wrapper.sh"
    script.write_text(f"#!/bin/sh\nWRAPPED_BY=sdk-wrapper exec {sys.executable} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


# -- what every kind shares ------------------------------------------------------------------


def test_a_toolchain_failure_is_fields_not_a_sentence_to_parse(tmp_path):
    log = tmp_path / "build.log"
    with pytest.raises(ToolchainFailed) as info:
        Executor(log, 60).run_worker(Path(sys.executable), _worker(tmp_path, FAILING_WORKER), {}, tmp_path / "w", label="vendorx")
    exc = info.value
    assert (exc.toolchain, exc.node, exc.op_type, exc.source_location) == ("vendorx", "/conv/Conv", "Conv", "the_toolchain.quantise")
    assert exc.final_line == "ValueError: cannot quantise this layer" and exc.log_path == str(log)
    # The sentence is made from the fields; a caller changes a field, never the text.
    assert str(exc) == f"The vendorx toolchain failed at node '/conv/Conv' (Conv): ValueError: cannot quantise this layer (in the_toolchain.quantise) (full log: {log})."
    hinted = exc.replace(hints=("Try --fix.",))
    assert str(hinted).endswith(f"(full log: {log}). Try --fix.") and hinted.node == exc.node
    exc.relocate(tmp_path, tmp_path / "kept.failed")
    assert exc.log_path == str(tmp_path / "kept.failed" / "build.log") and str(tmp_path / "kept.failed" / "build.log") in str(exc)


def test_the_array_helper_is_the_one_format_of_core_and_worker(tmp_path):
    """worker_arrays.py (beside worker_main, loaded as ctx.arrays) is what edgedeploy.arrays is."""
    from edgedeploy import arrays
    from edgedeploy.toolchains import worker_arrays

    assert arrays.write_arrays is worker_arrays.write_arrays and arrays.read_arrays is worker_arrays.read_arrays
    listed = Path(arrays.write_npy_list(tmp_path / "ds", [[np.zeros((1, 2)), np.ones(3)], [np.ones((1, 2)), np.zeros(3)]]))
    lines = listed.read_text().splitlines()
    assert len(lines) == 2 and all(len(line.split(" ")) == 2 and all(os.path.isabs(p) for p in line.split(" ")) for line in lines)
    assert np.array_equal(np.load(lines[1].split(" ")[0]), np.ones((1, 2)))


# -- user-supplied Python --------------------------------------------------------------------


def test_a_user_supplied_python_is_checked_then_used(tmp_path):
    env = UserPython(Path(sys.executable), modules=("numpy",), requirement=("numpy", "1.0"), source="test")
    result = Executor(tmp_path / "build.log", 120).run_worker(env, _worker(tmp_path), _request(tmp_path), tmp_path / "w", label="vendorx")
    _check_doubled(tmp_path, result)
    assert result["python"] == sys.executable
    assert env.checked["versions"]["numpy"] == np.__version__


@pytest.mark.parametrize(
    "env, says",
    [
        (UserPython(Path("/nonexistent/bin/python3"), modules=("numpy",), source="$EDGEDEPLOY_X_PYTHON"), "does not exist or cannot be run"),
        (UserPython(Path(sys.executable), modules=("vendor_sdk_that_is_not_here",), source="test"), "cannot import vendor_sdk_that_is_not_here"),
        (UserPython(Path(sys.executable), modules=("numpy",), requirement=("numpy", "999.0"), source="test"), "but 999.0 or newer is needed"),
        (UserPython(Path(sys.executable), modules=("numpy",), requirement=("no-such-distribution-xyz", "1.0"), source="test"), "has no no-such-distribution-xyz installed"),
    ],
)
def test_a_user_supplied_python_that_cannot_serve_is_one_sentence(tmp_path, env, says):
    with pytest.raises(ToolchainMissing) as info:
        Executor(tmp_path / "build.log", 120).run_worker(env, _worker(tmp_path), _request(tmp_path), tmp_path / "w", label="vendorx")
    message = str(info.value)
    assert says in message and "\n" not in message and message.endswith((".", ")"))
    assert not (tmp_path / "out.npz").exists()  # the worker never ran


def _external(name: str = "vendorx") -> ExternalToolchain:
    return ExternalToolchain(name, "a vendor SDK the user installed", detect=lambda: ToolchainStatus(name, False, "not found"))


def test_the_environment_kind_comes_from_the_variable_then_the_project_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EDGEDEPLOY_ZETA_PYTHON", raising=False)
    with pytest.raises(ToolchainMissing, match=r"set EDGEDEPLOY_ZETA_PYTHON, or `python = \.\.\.` under \[toolchains\.vendorx\]"):
        configured_environment(_external(), "zeta")
    (tmp_path / "edgedeploy.toml").write_text('[toolchains.vendorx]\npython = "venvs/sdk/bin/python"\n')
    env = configured_environment(_external(), "zeta")
    assert isinstance(env, UserPython) and env.python == tmp_path / "venvs/sdk/bin/python" and "[toolchains.vendorx] python" in env.source
    (tmp_path / "edgedeploy.toml").write_text('[toolchains.vendorx]\ncommand = ["docker", "run", "--rm", "sdk:1", "python3"]\n')
    env = configured_environment(_external(), "zeta")
    assert isinstance(env, ExternalCommand) and env.command == ("docker", "run", "--rm", "sdk:1", "python3")
    monkeypatch.setenv("EDGEDEPLOY_ZETA_PYTHON", sys.executable)
    env = configured_environment(_external(), "zeta")
    assert isinstance(env, UserPython) and env.python == Path(sys.executable) and env.source == "$EDGEDEPLOY_ZETA_PYTHON"


def test_a_bad_toolchains_table_is_one_sentence_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EDGEDEPLOY_ZETA_PYTHON", raising=False)
    (tmp_path / "edgedeploy.toml").write_text('[toolchains.vendorx]\npyhton = "/usr/bin/python3"\n')
    with pytest.raises(ConfigError, match=r"edgedeploy.toml: \[toolchains.vendorx\] unknown field 'pyhton'. Did you mean python\?"):
        configured_environment(_external(), "zeta")
    (tmp_path / "edgedeploy.toml").write_text('[toolchains.vendorx]\npython = "/usr/bin/python3"\ncommand = ["x"]\n')
    with pytest.raises(ConfigError, match="needs exactly one of python, command or ssh"):
        configured_environment(_external(), "zeta")


# -- external command ------------------------------------------------------------------------


def test_an_external_command_stands_for_the_interpreter(tmp_path):
    env = ExternalCommand((str(_wrapper(tmp_path)),))
    result = Executor(tmp_path / "build.log", 120).run_worker(env, _worker(tmp_path), _request(tmp_path), tmp_path / "w", label="vendorx")
    _check_doubled(tmp_path, result)
    assert result["wrapped"] == "sdk-wrapper"


def test_an_external_command_gets_the_one_time_out_and_group_kill(tmp_path):
    env = ExternalCommand((str(_wrapper(tmp_path)),))
    child_pid = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(ToolchainFailed) as info:
        Executor(tmp_path / "build.log", 3).run_worker(env, _worker(tmp_path), _request(tmp_path, sleep=120, child_pid=str(child_pid)), tmp_path / "w", label="vendorx")
    assert time.monotonic() - started < 60
    assert info.value.headline == "The vendorx worker timed out after 3 s and was stopped" and info.value.log_path == str(tmp_path / "build.log")
    pid = int(child_pid.read_text())
    assert _gone_within(pid, 5.0), "the worker's child outlived the time-out"


def _gone_within(pid: int, seconds: float) -> bool:
    """The process is gone or a zombie within `seconds`: a SIGKILLed process can still show 'R' for a moment on a loaded machine."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if "Z" in state:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_an_external_command_that_is_not_there_is_one_sentence(tmp_path):
    env = ExternalCommand(("/nonexistent/sdk-shell",))
    with pytest.raises(ToolchainMissing, match=r"Cannot start the vendorx toolchain environment \(command /nonexistent/sdk-shell\)"):
        Executor(tmp_path / "build.log", 30).run_worker(env, _worker(tmp_path), _request(tmp_path), tmp_path / "w", label="vendorx")


# -- remote over SSH -------------------------------------------------------------------------


def test_a_python_over_ssh_runs_the_worker_with_files_copied_both_ways(tmp_path, loopback_ssh_device):
    env = RemoteSsh(lambda: open_transport(loopback_ssh_device), python=sys.executable, name="loopback")
    log = tmp_path / "build.log"
    result = Executor(log, 120).run_worker(env, _worker(tmp_path), _request(tmp_path), tmp_path / "w", label="vendorx")
    _check_doubled(tmp_path, result)  # the output came back, and the result names the local copy
    assert "/edgedeploy." in (tmp_path / "w" / "request.remote.json").read_text()  # the worker saw remote paths
    assert "[edgedeploy-worker" in log.read_text()  # the remote worker's log lines are in the one log


def test_a_failure_over_ssh_is_the_same_toolchain_failure(tmp_path, loopback_ssh_device):
    env = RemoteSsh(lambda: open_transport(loopback_ssh_device), python=sys.executable, name="loopback")
    with pytest.raises(ToolchainFailed) as info:
        Executor(tmp_path / "build.log", 120).run_worker(env, _worker(tmp_path, FAILING_WORKER), {}, tmp_path / "w", label="vendorx")
    assert (info.value.node, info.value.final_line) == ("/conv/Conv", "ValueError: cannot quantise this layer")


# A worker that reads a calibration folder of .npy files and a templates folder, writes a new
# folder of results (nested), adds a file to a folder that already exists here, and names paths
# inside those folders in its result.
FOLDER_WORKER = """
import os
import numpy as np
def run(request, ctx):
    calib = request["calib"]
    total = sum(float(np.load(os.path.join(calib, name)).sum()) for name in sorted(os.listdir(calib)))
    template = open(os.path.join(request["templates"], "sub", "main.c.j2")).read()
    os.makedirs(os.path.join(request["out_dir"], "nested"))
    np.save(os.path.join(request["out_dir"], "nested", "sum.npy"), np.array([total]))
    open(os.path.join(request["out_dir"], "main.c"), "w").write(template.replace("{{ n }}", str(len(os.listdir(calib)))))
    open(os.path.join(request["results"], "summary.txt"), "w").write(f"total {total}")
    open(os.path.join(request["results"], "previous.txt"), "w").write("rewritten")
    return {"sum": os.path.join(request["out_dir"], "nested", "sum.npy"), "summary": os.path.join(request["results"], "summary.txt"), "calib": calib}
"""


def test_a_python_over_ssh_copies_folders_there_and_results_back(tmp_path, loopback_ssh_device):
    calib, templates, results = tmp_path / "calib", tmp_path / "templates", tmp_path / "results"
    calib.mkdir()
    for i in range(3):
        np.save(calib / f"sample_{i}.npy", np.full((2, 3), float(i + 1), dtype=np.float32))
    (templates / "sub").mkdir(parents=True)
    (templates / "sub" / "main.c.j2").write_text("int samples = {{ n }};\n")
    results.mkdir()
    (results / "previous.txt").write_text("old")
    (results / "kept.txt").write_text("untouched")
    kept_inode = (results / "kept.txt").stat().st_ino
    request = {"calib": str(calib), "templates": str(templates), "out_dir": str(tmp_path / "out"), "results": str(results)}
    env = RemoteSsh(lambda: open_transport(loopback_ssh_device), python=sys.executable, name="loopback")

    result = Executor(tmp_path / "build.log", 120).run_worker(env, _worker(tmp_path, FOLDER_WORKER), request, tmp_path / "w", label="vendorx")

    remote_request = json.loads((tmp_path / "w" / "request.remote.json").read_text())
    assert all(remote_request[key].startswith("/") and not remote_request[key].startswith(str(tmp_path)) for key in request)  # the worker saw remote folders
    # The output folder came back whole, nested file included; the result names local paths.
    assert result["sum"] == str(tmp_path / "out" / "nested" / "sum.npy") and result["calib"] == str(calib)
    assert np.load(tmp_path / "out" / "nested" / "sum.npy").tolist() == [6 * (1 + 2 + 3)]
    assert (tmp_path / "out" / "main.c").read_text() == "int samples = 3;\n"
    # What the worker wrote into an existing folder came back; what it did not touch was not copied over.
    assert result["summary"] == str(results / "summary.txt") and (results / "summary.txt").read_text() == "total 36.0"
    assert (results / "previous.txt").read_text() == "rewritten"
    assert (results / "kept.txt").read_text() == "untouched" and (results / "kept.txt").stat().st_ino == kept_inode
    assert sorted(p.name for p in calib.iterdir()) == ["sample_0.npy", "sample_1.npy", "sample_2.npy"]


def test_a_folder_archive_that_leaves_its_destination_is_refused(tmp_path):
    import io
    import tarfile

    from edgedeploy.toolchains import worker_folders

    archive = tmp_path / "bad.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"no"))
    with pytest.raises(ValueError, match="not a file or folder inside"):
        worker_folders.unpack(archive, tmp_path / "dest")
    assert not (tmp_path / "escaped.txt").exists()
