"""ESP-DL: Espressif's deep-learning library for the ESP32-S3 and ESP32-P4.

Models are quantised and exported to .espdl by esp-ppq, which runs in the `espdl` toolchain
environment (requirements/espdl.txt); the firmware that runs them is an ESP-IDF project
generated from templates/espdl and firmware/espdl.
"""

from pathlib import Path

import click

from edgedeploy.targets.base import Chip, Target
from edgedeploy.toolchains import RequirementStep, VenvToolchain

_REQ = Path(__file__).parent / "requirements"

# esp-dl component release the rules and firmware are written for, and the exporter that matches it.
ESP_DL_VERSION = "3.3.9"
ESP_PPQ_VERSION = "1.3.12"

TOOLCHAIN = VenvToolchain(
    name="espdl",
    description="esp-ppq: int8/int16 quantisation and .espdl export for ESP-DL",
    steps=(RequirementStep(_REQ / "espdl.txt"),),
    import_modules=("esp_ppq",),
    distributions=("esp-ppq", "torch", "onnx", "onnxruntime", "numpy"),
)


class EspDlTarget(Target):
    id = "espdl"
    vendor = "Espressif"
    name = "ESP-DL"
    toolchain = TOOLCHAIN
    stages = ("convert", "codegen", "simulate", "runner")
    build_options = (
        click.Option(
            ["--int16-layers"],
            "int16_layers",
            multiple=True,
            metavar="auto[=DB]|NAME,...",
            help=(
                "ESP-DL: mixed precision. Put these ONNX nodes in int16 (the rest int8), or `auto`: move the layers "
                "that add the most quantisation error to int16 until the outputs' SNR reaches 30 dB (or DB); see docs/espdl.md."
            ),
        ),
    )

    def build(self, ctx) -> None:
        """Audit, convert with esp-ppq, verify accuracy before/after, generate the ESP-IDF project (build.py)."""
        from edgedeploy.targets.espdl.build import build

        build(ctx)

    def measure_serial(self, artifact, manifest, device, **options) -> dict:
        """Flash the artifact's firmware (idf.py where ESP-IDF is installed, or binaries the user built) and
        read its result lines over the serial port: see board.measure_on_board for the options and result."""
        from edgedeploy.targets.espdl.board import measure_on_board

        return measure_on_board(artifact, manifest, device, **options)

    def runner_spec(self, artifact, manifest, device):
        """ESP-DL artifacts run as firmware on a board, not as a runner copied to a device: see measure_serial."""
        from edgedeploy.errors import DeviceError

        if device.transport == "serial":
            # `edgedeploy measure` sends serial devices to measure_serial; this is for other callers.
            raise DeviceError(f"ESP-DL boards are measured through measure_serial (firmware over the serial port), not a runner, for '{device.name}'.")
        raise DeviceError(
            f"ESP-DL artifacts run as firmware on an {manifest.get('target', {}).get('chip', 'ESP32')} over a serial port, not as a "
            f"runner on device '{device.name}' ({device.transport}); give a serial device (chip@/dev/ttyUSB0 or an inventory entry "
            "with transport = \"serial\")."
        )

    chips = (
        Chip(
            id="esp32s3",
            name="ESP32-S3",
            accelerator="Xtensa LX7 AI vector instructions (no NPU)",
            cpu="2x Xtensa LX7",
            accelerator_clock_mhz=None,
            cpu_clock_mhz=240,
            memory={"sram_bytes": 512 * 1024, "psram_bytes": 8 * 1024 * 1024, "flash_bytes": 8 * 1024 * 1024},
            precisions=("int8", "int16"),
            toolchain_version=f"esp-dl {ESP_DL_VERSION} / esp-ppq {ESP_PPQ_VERSION}",
            fallback_unit="CPU (scalar)",
            notes="memory: ESP32-S3-DevKitC-1 N8R8 (8 MB octal PSRAM, 8 MB flash)",
        ),
        Chip(
            id="esp32p4",
            name="ESP32-P4",
            accelerator="RISC-V AI/SIMD (PIE) extensions (no NPU)",
            cpu="2x RISC-V HP",
            accelerator_clock_mhz=None,
            cpu_clock_mhz=400,
            memory={"sram_bytes": 768 * 1024, "psram_bytes": 32 * 1024 * 1024, "flash_bytes": 16 * 1024 * 1024},
            precisions=("int8", "int16"),
            toolchain_version=f"esp-dl {ESP_DL_VERSION} / esp-ppq {ESP_PPQ_VERSION}",
            fallback_unit="CPU (scalar)",
            notes="memory: ESP32-P4-Function-EV-Board (32 MB PSRAM, 16 MB flash)",
        ),
    )

    def toolchain_verdict(self, model_path: Path, chip_id: str, workdir: Path, log_path: Path, *, inputs=None, precision: str = "int8", **options):
        """esp-ppq's own verdict: which nodes it quantises and which it keeps in float (see verdict.py).

        `inputs`: an .npz of calibration inputs (keys: graph input names), else random data;
        `precision`: "int8" or "int16". Other options: calib_steps, case_timeout_s, seed, progress, home.
        """
        return self.toolchain_verdicts([model_path], chip_id, workdir, log_path, inputs=inputs, precision=precision, **options)[0]

    def toolchain_verdicts(self, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, *, inputs=None, precision: str = "int8", **options) -> list:
        """esp-ppq's verdict on many models in one worker process (imports torch and esp-ppq once).

        `inputs`: one .npz per model (or None for random data), or a single .npz for all.
        """
        from edgedeploy.targets.espdl.verdict import run_verdicts

        self.chip(chip_id)  # KeyError for a chip this target does not have
        return run_verdicts(self.toolchain, model_paths, chip_id, workdir, log_path, inputs=inputs, precision=precision, **options)


TARGET = EspDlTarget()

