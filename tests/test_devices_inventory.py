"""The device inventory file: where it is found, what it may say, and its one-sentence errors."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from edgedeploy.cli import cli
from edgedeploy.devices import load_inventory
from edgedeploy.devices.inventory import INVENTORY_ENV
from edgedeploy.errors import DeviceError

TOML = """
[devices.rock5b]
chip = "rk3588"
transport = "ssh"
host = "rock5b.lan"
user = "debian"
port = 2222
python = "/usr/bin/python3"
workdir = "/tmp/edgedeploy"
ssh_options = ["IdentityFile=~/.ssh/rock5b"]

[devices.bench-pc]
host = "pc.lan"
"""


@pytest.fixture
def isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv(INVENTORY_ENV, raising=False)
    return tmp_path / "config" / "edgedeploy"


def test_toml_inventory(tmp_path, isolated_config):
    path = tmp_path / "devices.toml"
    path.write_text(TOML)
    inv = load_inventory(path)
    rock = inv.get("rock5b")
    assert (rock.chip, rock.transport, rock.host, rock.user, rock.port) == ("rk3588", "ssh", "rock5b.lan", "debian", 2222)
    assert rock.python == "/usr/bin/python3" and rock.workdir == "/tmp/edgedeploy"
    assert rock.ssh_options == ("IdentityFile=~/.ssh/rock5b",)
    pc = inv.get("bench-pc")
    assert pc.transport == "ssh" and pc.chip is None and pc.python == "python3"  # ssh is implied by a host
    assert inv.get("local").transport == "local" and inv.get("local").python == sys.executable


def test_json_inventory_from_the_environment_variable(tmp_path, isolated_config, monkeypatch):
    path = tmp_path / "inv.json"
    path.write_text(json.dumps({"devices": {"jetson": {"chip": "Jetson-Orin-Nano", "host": "jetson"}}}))
    monkeypatch.setenv(INVENTORY_ENV, str(path))
    dev = load_inventory().get("jetson")
    assert (dev.host, dev.chip, dev.transport) == ("jetson", "jetson-orin-nano", "ssh")


def test_default_location_and_missing_default(isolated_config):
    inv = load_inventory()
    assert inv.path is None and list(inv.devices) == ["local"]
    isolated_config.mkdir(parents=True)
    (isolated_config / "devices.toml").write_text(TOML)
    assert load_inventory().path == isolated_config / "devices.toml"


@pytest.mark.parametrize(
    "text, message",
    [
        ('[devices.a]\nchip = "rk3588"\ntransport = "ssh"\n', "needs a host"),
        ('[devices.a]\nhost = "h"\nchip = "no-such-chip"\n', "unknown chip 'no-such-chip'"),
        ('[devices.a]\nhost = "h"\nport = 70000\n', "port must be"),
        ('[devices.a]\nhost = "h"\nprot = 22\n', "unknown setting"),
        ('[devices.a]\ntransport = "telnet"\n', "transport must be"),
        ('[devices.a]\nhost = "h"\nssh_options = ["StrictHostKeyChecking=no"]\n', "may not be set"),
        ('[devices.a]\nhost = "-oProxyCommand=evil"\n', "is not a host name"),
        ('[devices.a]\ntransport = "serial"\n', "serial_port"),
        ("[devices.a\n", "not valid TOML"),
        ('devices = 3\n', "expected a [devices.NAME] table"),
    ],
)
def test_bad_inventories_are_one_sentence(tmp_path, isolated_config, text, message):
    path = tmp_path / "devices.toml"
    path.write_text(text)
    from edgedeploy.targets import chip_ids

    with pytest.raises(DeviceError) as info:
        load_inventory(path, chip_ids())  # the CLI passes the registry's chips; the device layer knows no targets
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unknown_device_and_missing_named_file(tmp_path, isolated_config):
    with pytest.raises(DeviceError, match="Unknown device 'nope'.*known devices: local"):
        load_inventory().get("nope")
    with pytest.raises(DeviceError, match="does not exist"):
        load_inventory(tmp_path / "absent.toml")


def test_devices_list_cli(tmp_path, isolated_config):
    path = tmp_path / "devices.toml"
    path.write_text(TOML)
    result = CliRunner().invoke(cli, ["devices", "list", "--inventory", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    names = {d["name"]: d for d in data["devices"]}
    assert names["rock5b"]["address"] == "debian@rock5b.lan:2222" and names["rock5b"]["chip"] == "rk3588"
    text = CliRunner().invoke(cli, ["devices", "list", "--inventory", str(path)])
    assert "rock5b" in text.stdout and "bench-pc" in text.stdout


def test_devices_check_over_loopback_ssh(loopback_sshd, tmp_path, isolated_config):
    path = tmp_path / "devices.json"
    path.write_text(json.dumps({"devices": {"loop": loopback_sshd.inventory_entry()}}))
    result = CliRunner().invoke(cli, ["devices", "check", "loop", "--inventory", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert facts["executable"] == sys.executable and facts["cpus"] >= 1
