"""Hostile device inventories: every mistake is one sentence naming the file, the entry and the field.

The inventory is the user's own (trusted not to be malicious by intent), but a copied or
mistyped one must never crash, and ssh options that run local commands need the entry's
explicit `allow_commands = true`.
"""

from __future__ import annotations

import json

import pytest

CATEGORY = "inventory"

SSH = '[devices.board]\nhost = "board.lan"\n'
SERIAL = '[devices.board]\ntransport = "serial"\nserial_port = "/dev/ttyUSB0"\n'

TOML_CASES = {
    "baud is a word": (SERIAL + 'baud = "fast"\n', "baud"),
    "baud negative": (SERIAL + "baud = -9600\n", "baud"),
    "baud zero": (SERIAL + "baud = 0\n", "baud"),
    "baud float": (SERIAL + "baud = 115200.5\n", "baud"),
    "baud bool": (SERIAL + "baud = true\n", "baud"),
    "baud absurd": (SERIAL + "baud = 99999999999\n", "baud"),
    "baud a list": (SERIAL + "baud = [1]\n", "baud"),
    "port a string": (SSH + 'port = "22"\n', "port"),
    "port zero": (SSH + "port = 0\n", "port"),
    "port too big": (SSH + "port = 65536\n", "port"),
    "port bool": (SSH + "port = true\n", "port"),
    "host empty": ('[devices.board]\nhost = ""\ntransport = "ssh"\n', "host"),
    "host a number": ("[devices.board]\nhost = 10\n", "host"),
    "host a table": ('[devices.board]\ntransport = "ssh"\nhost = { name = "x" }\n', "host"),
    "host with a space": ('[devices.board]\nhost = "a b"\n', "host"),
    "host option injection": ('[devices.board]\nhost = "-oProxyCommand=touch PWNED"\n', "host"),
    "host with user": ('[devices.board]\nhost = "root@board"\n', "host"),
    "host with newline": ('[devices.board]\nhost = "board\\nProxyCommand x"\n', "host"),
    "user a number": (SSH + "user = 0\n", "user"),
    "user option injection": (SSH + 'user = "-oProxyCommand=x"\n', "user"),
    "user with colon": (SSH + 'user = "a:b"\n', "user"),
    "python a list": (SSH + 'python = ["python3"]\n', "python"),
    "workdir empty": (SSH + 'workdir = ""\n', "workdir"),
    "workdir with NUL": (SSH + 'workdir = "/tmp/\\u0000x"\n', "workdir"),
    "description a number": (SSH + "description = 5\n", "description"),
    "chip a number": (SSH + "chip = 3588\n", "chip"),
    "chip unknown": (SSH + 'chip = "rk9999"\n', "unknown chip"),
    "transport unknown": ('[devices.board]\ntransport = "telnet"\nhost = "h"\n', "transport"),
    "transport a list": ('[devices.board]\ntransport = ["ssh"]\nhost = "h"\n', "transport"),
    "ssh without host": ('[devices.board]\ntransport = "ssh"\n', "needs a host"),
    "serial without port": ('[devices.board]\ntransport = "serial"\n', "serial_port"),
    "serial_port a number": ('[devices.board]\ntransport = "serial"\nserial_port = 0\n', "serial_port"),
    "unknown setting": (SSH + "prot = 22\n", "unknown setting"),
    "entry not a table": ('[devices]\nboard = "board.lan"\n', "table of settings"),
    "devices not a table": ("devices = 3\n", "[devices.NAME]"),
    "devices an array of tables": ('[[devices]]\nhost = "h"\n', "[devices.NAME]"),
    "name with a space": ('[devices."my board"]\nhost = "h"\n', "not a usable device name"),
    "name starting with a dash": ('[devices."-rf"]\nhost = "h"\n', "not a usable device name"),
    "name too long": ('[devices.' + "b" * 70 + ']\nhost = "h"\n', "not a usable device name"),
    "name unicode": ('[devices."bórd"]\nhost = "h"\n', "not a usable device name"),
    "ssh_options a string": (SSH + 'ssh_options = "IdentityFile=k"\n', "ssh_options"),
    "ssh_options of numbers": (SSH + "ssh_options = [1, 2]\n", "ssh_options"),
    "ssh option without value": (SSH + 'ssh_options = ["IdentityFile"]\n', "Key=Value"),
    "ssh option with newline": (SSH + 'ssh_options = ["IdentityFile=k\\nProxyCommand=x"]\n', "one line"),
    "ssh option disables host keys": (SSH + 'ssh_options = ["StrictHostKeyChecking=no"]\n', "may not be set"),
    "ssh option batchmode off": (SSH + 'ssh_options = ["BatchMode no"]\n', "may not be set"),
    "allow_commands a string": (SSH + 'allow_commands = "yes"\n', "allow_commands"),
    "allow_commands a number": (SSH + "allow_commands = 1\n", "allow_commands"),
    "TOML syntax error": ("[devices.board\n", "not valid TOML"),
    "TOML duplicate key": (SSH + 'host = "again"\n', "not valid TOML"),
    "empty file": ("", "[devices.NAME]"),
}

COMMAND_OPTIONS = [
    "ProxyCommand=nc %h %p",
    "proxycommand touch PWNED",
    "KnownHostsCommand=/bin/sh -c 'touch PWNED'",
    "LocalCommand=touch PWNED",
    "PermitLocalCommand=yes",
    "Match exec \"touch PWNED\"",
    "PKCS11Provider=/tmp/evil.so",
    "SecurityKeyProvider=/tmp/evil.so",
]
for _option in COMMAND_OPTIONS:
    TOML_CASES[f"runs a command: {_option.split()[0].split('=')[0]} ({_option[:12]})"] = (SSH + f"ssh_options = [{json.dumps(_option)}]\n", "allow_commands = true")


def _inventory(hostile, text: str | bytes, name: str = "devices.toml"):
    path = hostile.tmp / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    hostile.guard(hostile.tmp)
    return path


@pytest.mark.parametrize("case", sorted(TOML_CASES), ids=str)
def test_inventory_entry(hostile, case):
    text, fragment = TOML_CASES[case]
    path = _inventory(hostile, text)
    outcome = hostile.run("devices", "list", "--inventory", str(path))
    sentence = hostile.refused(outcome, fragment)
    assert str(path) in sentence, "the sentence names the file"
    if "devices." in text and case not in ("devices not a table", "devices an array of tables", "entry not a table", "TOML syntax error", "TOML duplicate key") and not case.startswith("name "):
        assert "device 'board'" in sentence, "the sentence names the entry"
    assert not (hostile.tmp / "PWNED").exists()


@pytest.mark.parametrize("option", COMMAND_OPTIONS)
def test_command_options_with_allow_commands(hostile, option):
    """With allow_commands = true the same entry loads: the user said they mean it."""
    path = _inventory(hostile, SSH + f"ssh_options = [{json.dumps(option)}]\nallow_commands = true\n")
    hostile.accepted(hostile.run("devices", "list", "--inventory", str(path)))
    assert not (hostile.tmp / "PWNED").exists(), "listing devices never runs an ssh option"


FILE_CASES = {
    "not UTF-8 (TOML)": (b'[devices.board]\nhost = "b\xff\xfe"\n', "devices.toml", "UTF-8"),
    "not UTF-8 (JSON)": (b'{"devices": {"board": {"host": "\xff"}}}', "devices.json", "UTF-8"),
    "latin-1 description": ('[devices.board]\nhost = "h"\ndescription = "Büro"\n'.encode("latin-1"), "devices.toml", "UTF-8"),
    "UTF-16 file": ('[devices.board]\nhost = "h"\n'.encode("utf-16"), "devices.toml", "UTF-8"),
    "JSON syntax error": (b'{"devices": ', "devices.json", "not valid JSON"),
    "JSON top-level list": (b"[1, 2]", "devices.json", "table of devices"),
    "JSON devices a list": (b'{"devices": [{"host": "h"}]}', "devices.json", "[devices.NAME]"),
    "JSON entry a list": (b'{"devices": {"board": ["h"]}}', "devices.json", "table of settings"),
    "JSON baud a string": (b'{"devices": {"board": {"transport": "serial", "serial_port": "/dev/x", "baud": "fast"}}}', "devices.json", "baud"),
    "JSON port null": (b'{"devices": {"board": {"host": "h", "port": 1e400}}}', "devices.json", "port"),
    "binary garbage": (bytes(range(256)) * 4, "devices.toml", ""),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES), ids=str)
def test_inventory_file(hostile, case):
    data, name, fragment = FILE_CASES[case]
    path = _inventory(hostile, data, name)
    hostile.refused(hostile.run("devices", "list", "--inventory", str(path)), fragment)


def test_inventory_is_a_directory(hostile):
    (hostile.tmp / "devices.toml").mkdir()
    hostile.refused(hostile.run("devices", "list", "--inventory", str(hostile.tmp / "devices.toml")), "")


def test_inventory_from_environment_missing(hostile):
    hostile.refused(hostile.run("devices", "list", env={"EDGEDEPLOY_DEVICES": str(hostile.tmp / "absent.toml")}), "does not exist")


def test_unknown_device_in_measure(hostile):
    path = _inventory(hostile, SSH)
    hostile.refused(hostile.run("devices", "check", "nope", "--inventory", str(path)), "Unknown device 'nope'")
