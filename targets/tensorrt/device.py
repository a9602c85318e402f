"""What a Jetson is: its L4T / JetPack release, TensorRT version, board, and the engine provenance.

An engine runs only on the GPU and TensorRT version it was built with, so every build records
where it was built (`Provenance`), the build cache is keyed by the device's fingerprint, and the
runners compare the provenance with what they find before loading an engine.

`PROBE_SCRIPT` runs on the device through the transport (`sh -c PROBE_SCRIPT sh TRTEXEC`) and
prints sections that `parse_probe` reads; every command in it may be missing without failing it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

from edgedeploy.errors import DeviceError
from edgedeploy.targets.tensorrt.trtexec_output import version_from_tag

PROBE_SCRIPT = r"""
echo '== tegra'; cat /etc/nv_tegra_release 2>/dev/null | head -1
echo '== model'; tr -d '\000' < /proc/device-tree/model 2>/dev/null; echo
echo '== jetpack'; dpkg-query -W -f='${Version}\n' nvidia-jetpack 2>/dev/null
echo '== trtexec'; if [ -x "$1" ]; then "$1" --help 2>&1 | head -2; else echo "missing: $1"; fi
echo '== python-tensorrt'; python3 -c 'import tensorrt; print(tensorrt.__version__)' 2>/dev/null
echo '== arch'; uname -m
echo '== end'
"""

# L4T release -> JetPack, for boards without the nvidia-jetpack package (NVIDIA's JetPack archive
# pages list the L4T release of each JetPack). Only Orin-capable releases.
L4T_TO_JETPACK = {
    "35.1.0": "5.0.2", "35.2.1": "5.1", "35.3.1": "5.1.1", "35.4.1": "5.1.2", "35.5.0": "5.1.3", "35.6.0": "5.1.4",
    "35.6.1": "5.1.5", "36.2.0": "6.0 DP", "36.3.0": "6.0", "36.4.0": "6.1", "36.4.3": "6.2", "36.4.4": "6.2.1",
}
# Board model string (/proc/device-tree/model) -> chip id. Order matters: "Orin Nano" before "Orin N".
BOARD_CHIPS = (("AGX Orin", "jetson-agx-orin"), ("Orin Nano", "jetson-orin-nano"), ("Orin NX", "jetson-orin-nx"))


@dataclass(frozen=True)
class DeviceFingerprint:
    """What decides whether an engine fits a device: the build cache key and the runners' check."""

    l4t: str | None
    jetpack: str | None
    trt_version: str | None
    board: str | None
    arch: str | None
    trtexec: str | None  # the path probed; None when it is missing

    def key_fields(self) -> dict:
        # The trtexec path does not change what the engine is; the rest does.
        return {"l4t": self.l4t, "jetpack": self.jetpack, "trt_version": self.trt_version, "board": self.board, "arch": self.arch}

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.key_fields(), sort_keys=True).encode()).hexdigest()

    def to_dict(self) -> dict:
        return asdict(self)


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^== (\S+)$", line.strip())
        if m:
            current = m.group(1)
            out[current] = []
        elif current is not None and line.strip():
            out[current].append(line.strip())
    return out


def parse_l4t(line: str) -> str | None:
    """'# R36 (release), REVISION: 4.0, GCID: ...' -> '36.4.0'."""
    m = re.search(r"R(\d+) \(release\), REVISION: (\d+)\.(\d+)", line)
    return f"{m.group(1)}.{m.group(2)}.{m.group(3)}" if m else None


def parse_probe(text: str, trtexec: str) -> DeviceFingerprint:
    s = _sections(text)
    l4t = parse_l4t(s.get("tegra", [""])[0]) if s.get("tegra") else None
    jetpack = None
    if s.get("jetpack"):
        m = re.match(r"^(\d+\.\d+(?:\.\d+)?)", s["jetpack"][0])
        jetpack = m.group(1) if m else s["jetpack"][0]
    elif l4t in L4T_TO_JETPACK:
        jetpack = f"{L4T_TO_JETPACK[l4t]} (from L4T {l4t})"
    trt = None
    have_trtexec = True
    for line in s.get("trtexec", []):
        if line.startswith("missing:"):
            have_trtexec = False
        m = re.search(r"\[TensorRT (v\d+)\]", line)
        if m:
            trt = version_from_tag(m.group(1))
    if trt is None and s.get("python-tensorrt"):
        trt = s["python-tensorrt"][0]
    board = s.get("model", [None])[0] if s.get("model") else None
    arch = s.get("arch", [None])[0] if s.get("arch") else None
    return DeviceFingerprint(l4t=l4t, jetpack=jetpack, trt_version=trt, board=board, arch=arch, trtexec=trtexec if have_trtexec else None)


def chip_of_board(board: str | None) -> str | None:
    if not board:
        return None
    for needle, chip in BOARD_CHIPS:
        if needle in board:
            return chip
    return None


def check_device_chip(fingerprint: DeviceFingerprint, chip_id: str, device_name: str) -> None:
    """Refuse to build for one chip on a board that is another (the engine would be for the wrong GPU)."""
    found = chip_of_board(fingerprint.board)
    if found is not None and found != chip_id:
        raise DeviceError(f"Device '{device_name}' is a {fingerprint.board} ({found}), not a {chip_id}; build with --target {found} or pick another device.")


@dataclass(frozen=True)
class Provenance:
    """Where an engine was built; written next to the engine as engine_info.json and into the manifest."""

    trt_version: str | None
    gpu_name: str | None
    compute_capability: str | None
    l4t: str | None
    jetpack: str | None
    board: str | None
    dla_core: int | None
    precision: str

    def to_dict(self) -> dict:
        return asdict(self)


def major_minor(version: str | None) -> str | None:
    if not version:
        return None
    parts = str(version).split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else parts[0]


def engine_mismatch(built: dict, found: dict) -> str | None:
    """The one sentence saying why an engine built with `built` must not run where `found` holds, or None.

    TensorRT refuses an engine from another TensorRT version (major.minor.patch must match for a
    plan without version compatibility) and the kernels are chosen for one compute capability.
    """
    for key, what in (("trt_version", "TensorRT"), ("compute_capability", "GPU compute capability"), ("gpu_name", "GPU")):
        a, b = built.get(key), found.get(key)
        if a and b and str(a) != str(b):
            if key == "trt_version" and _same_release(str(a), str(b)):
                continue
            return f"This engine was built for {what} {a}, but this device has {b}; rebuild it on this device (edgedeploy build --device ...)."
    return None


def _same_release(a: str, b: str) -> bool:
    """'8.6.2' and '8.6.2.3' are the same release (trtexec prints three parts, the module four)."""
    pa, pb = a.split("."), b.split(".")
    n = min(len(pa), len(pb), 3)
    return pa[:n] == pb[:n]
