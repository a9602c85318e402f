"""The ssh transport against a real OpenSSH server on loopback (tests/ssh_fixture.py).

Nothing is faked: the system `ssh` client talks to `/usr/sbin/sshd` started for the test, with
a host key and a client key generated for it.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from edgedeploy.devices import DeviceConnectionLost, open_transport
from edgedeploy.devices.ssh import FORCED_OPTIONS, SshTransport, check_ssh_settings
from edgedeploy.errors import DeviceError

# Names a careless transport would let the remote shell interpret: command substitution,
# separators, both quotes, a glob, a leading dash, a newline, non-ASCII.
HOSTILE_NAMES = [
    "plain.txt",
    "with space.bin",
    "$(touch PWNED_SUBST).txt",
    "`touch PWNED_TICK`",
    "semi;touch PWNED_SEMI",
    "quote'single",
    'quote"double',
    "-rf",
    "star*?[x]",
    "new\nline",
    "ünïcødé ✓",
    "back\\slash",
]


@pytest.fixture
def transport(loopback_ssh_device):
    t = open_transport(loopback_ssh_device)
    workdir = t.make_workdir()
    yield t
    try:
        if t.workdir:
            t.cleanup(workdir)
    except DeviceError:
        pass  # the connection was dropped on purpose
    t.close()


def test_copy_run_fetch_round_trip(transport, tmp_path):
    payload = bytes(range(256)) * 4096  # binary, 1 MiB: no newline translation, no truncation
    local = tmp_path / "payload.bin"
    local.write_bytes(payload)
    transport.put(local, "sub/dir/payload.bin")
    script = tmp_path / "double.py"
    script.write_text("import sys\ndata = open(sys.argv[1], 'rb').read()\nopen('out.bin', 'wb').write(data * 2)\nprint('wrote', len(data) * 2)\nsys.exit(3)\n")
    transport.put(script, "double.py")
    result = transport.run([sys.executable, "double.py", "sub/dir/payload.bin"], transport.workdir, timeout_s=60)
    assert result.returncode == 3  # the command's own exit status, not ssh's
    assert result.stdout.strip() == f"wrote {2 * len(payload)}"
    fetched = tmp_path / "back" / "out.bin"
    transport.get("out.bin", fetched)
    assert fetched.read_bytes() == payload * 2


def test_hostile_file_names_and_arguments_arrive_unchanged(transport, tmp_path):
    listing_script = tmp_path / "echo_args.py"
    listing_script.write_text(
        "import json, os, sys\n"
        "print(json.dumps({'args': sys.argv[1:], 'files': sorted(os.listdir('names'))}))\n"
    )
    transport.put(listing_script, "echo_args.py")
    for i, name in enumerate(HOSTILE_NAMES):
        src = tmp_path / f"src{i}"
        src.write_text(name)
        transport.put(src, f"names/{name}")
    result = transport.run([sys.executable, "echo_args.py", *HOSTILE_NAMES], transport.workdir, timeout_s=60)
    assert result.returncode == 0, result.stderr
    import json

    seen = json.loads(result.stdout)
    assert seen["args"] == HOSTILE_NAMES
    assert seen["files"] == sorted(HOSTILE_NAMES)
    for i, name in enumerate(HOSTILE_NAMES):
        back = tmp_path / f"back{i}"
        transport.get(f"names/{name}", back)
        assert back.read_text() == name
    # Nothing was executed by a shell along the way.
    check = transport.run(["sh", "-c", "ls -a; ls -a ~ /tmp"], transport.workdir, timeout_s=30)
    assert "PWNED" not in check.stdout


def test_hostile_work_folder_and_cleanup(loopback_sshd, tmp_path):
    base = tmp_path / "runs $(touch PWNED_WD) 'x'"
    device = loopback_sshd.device(workdir=str(base))
    t = open_transport(device)
    workdir = t.make_workdir()
    assert Path(workdir).parent == base and Path(workdir).is_dir()
    t.run(["sh", "-c", "echo ok > marker"], workdir, timeout_s=30)
    assert (Path(workdir) / "marker").read_text() == "ok\n"
    t.cleanup(workdir)
    assert not Path(workdir).exists()
    assert not list(tmp_path.rglob("PWNED*"))
    with pytest.raises(DeviceError, match="did not create"):
        t.cleanup(str(base))
    control_dir = Path(t._control_dir)
    assert control_dir.is_dir()
    t.close()
    assert not control_dir.exists()  # the shared connection ended, its socket folder removed


def test_missing_result_file_is_a_clear_error(transport, tmp_path):
    with pytest.raises(DeviceError, match="was not written by the run"):
        transport.get("never-written.json", tmp_path / "x.json")


def test_unknown_host_key_is_refused(loopback_sshd, tmp_path):
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    t = open_transport(loopback_sshd.device(known_hosts=empty))
    with pytest.raises(DeviceError, match="not in known_hosts") as info:
        t.make_workdir()
    assert not isinstance(info.value, DeviceConnectionLost)
    assert empty.read_text() == ""  # nothing was added behind the user's back


def test_changed_host_key_is_refused(loopback_sshd, tmp_path):
    import subprocess

    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts_wrong"
    wrong.write_text(f"[127.0.0.1]:{loopback_sshd.port} {other.with_suffix('.pub').read_text().strip()}\n")
    t = open_transport(loopback_sshd.device(known_hosts=wrong))
    with pytest.raises(DeviceError, match="CHANGED"):
        t.make_workdir()


def test_options_cannot_switch_off_host_key_checking(loopback_sshd):
    with pytest.raises(DeviceError, match="may not be set"):
        check_ssh_settings(loopback_sshd.device(ssh_options=("StrictHostKeyChecking=no",)))
    with pytest.raises(DeviceError, match="may not be set"):
        check_ssh_settings(loopback_sshd.device(ssh_options=("batchmode no",)))
    # Strict checking comes first on the command line, so it wins over any later value.
    argv = SshTransport(loopback_sshd.device()).ssh_argv("true")
    assert argv.index("StrictHostKeyChecking=yes") < argv.index(next(a for a in argv if a.startswith("UserKnownHostsFile")))
    assert all(opt in argv for opt in FORCED_OPTIONS)
    # Throwing known_hosts away does not make ssh trust a new key.
    t = open_transport(loopback_sshd.device(ssh_options=("UserKnownHostsFile=/dev/null", "GlobalKnownHostsFile=/dev/null", f"IdentityFile={loopback_sshd.client_key}")))
    with pytest.raises(DeviceError, match="not in known_hosts"):
        t.make_workdir()


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/x", "user@host", "two words", ""])
def test_hosts_that_ssh_would_read_as_options_are_refused(loopback_sshd, host):
    with pytest.raises(DeviceError):
        check_ssh_settings(loopback_sshd.device(host=host))


def test_unreachable_device_is_one_sentence(loopback_sshd):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    t = open_transport(loopback_sshd.device(port=closed_port))
    with pytest.raises(DeviceError, match="cannot be reached: Connection refused"):
        t.make_workdir()


def test_connection_drop_mid_run_keeps_what_was_printed(loopback_sshd, transport):
    marker = Path(transport.workdir) / "reached"  # the "board" is this machine

    def drop_when_running():
        import time

        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # let the line printed before the marker reach the client
        loopback_sshd.drop_connections()

    killer = threading.Thread(target=drop_when_running)
    killer.start()
    try:
        with pytest.raises(DeviceConnectionLost, match="dropped while running") as info:
            transport.run(["sh", "-c", "echo first-result; touch reached; sleep 30; echo never"], transport.workdir, timeout_s=60)
    finally:
        killer.join()
    partial = info.value.partial
    assert partial is not None and partial.returncode is None
    assert partial.stdout == "first-result\n"
    assert partial.wall_s < 20  # noticed at once, not after the command's 30 s


def _processes_running(needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_time_out_stops_the_remote_command(transport):
    import time

    needle = "edgedeploy-timeout-probe"
    with pytest.raises(DeviceError, match="did not finish within 1 s"):
        transport.run(["sh", "-c", f"sleep 40; echo {needle}"], transport.workdir, timeout_s=1)
    # The remote process group was signalled: nothing is left running anywhere on the "board"
    # (an orphan would have been re-parented away from sshd, so look at every process).
    deadline = time.monotonic() + 5
    while _processes_running(needle) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_running(needle) == []
