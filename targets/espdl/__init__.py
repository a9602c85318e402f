"""ESP-DL: Espressif's deep-learning library for the ESP32-S3 and ESP32-P4.

Models are quantised and exported to .espdl by esp-ppq, which runs in the `espdl` toolchain
environment (requirements/espdl.txt); the firmware that runs them is an ESP-IDF project
generated from templates/espdl and firmware/espdl.
"""

from dataclasses import dataclass
from pathlib import Path

from edgedeploy.targets.base import RANKED_NODES, CalibrationNeed, Capability, RepairKnob, Target, TargetOptions, chip_table, option
from edgedeploy.reproducible import Variation
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


@dataclass(frozen=True)
class EspDlOptions(TargetOptions):
    int16_layers: tuple[str, ...] = option(
        "--espdl-int16-layers",
        "Mixed precision: put these ONNX nodes in int16 (the rest int8), or `auto`: move the layers that add the most "
        "quantisation error to int16 until the outputs' SNR reaches 30 dB (or DB); see docs/espdl.md.",
        multiple=True,
        metavar="auto[=DB]|NAME,...",
        deprecated=("--int16-layers",),
    )
    calib_method: str | None = option(
        "--espdl-calib-method",
        "How esp-ppq sets the activations' int8/int16 ranges from the calibration data: kl (its default), minmax, "
        "percentile or mse; or auto: kl, and where the outputs' SNR on the calibration data is under 10 dB, minmax too, "
        "keeping the one with less output error; see docs/espdl.md.",
        choices=("kl", "minmax", "percentile", "mse", "auto"),
        deprecated=("--calib-method",),
    )
    equalization: bool = option(
        "--espdl-equalization",
        "Run esp-ppq's layer-wise equalisation (QuantizationSetting.equalization) before calibrating: rescales consecutive layers' "
        "weights so their channels share one range better.",
        is_flag=True,
    )
    bias_correction: bool = option(
        "--espdl-bias-correction",
        "Run esp-ppq's bias correction (QuantizationSetting.bias_correct): shifts each layer's bias by the mean error int8 adds to its output.",
        is_flag=True,
    )


class EspDlTarget(Target):
    id = "espdl"
    vendor = "Espressif"
    name = "ESP-DL"
    toolchain = TOOLCHAIN
    listing_order = 10
    capabilities = frozenset({Capability.AUDIT, Capability.SIMULATE, Capability.SERIAL, Capability.VERDICT, Capability.BENCH, Capability.DIAGNOSE})
    host_unavailable = (
        "model.espdl runs only in ESP-DL's C++ runtime, whose kernels are the ESP32-S3/P4's SIMD instructions; "
        "esp-ppq cannot load a .espdl file (its simulator runs the quantised graph in PyTorch only within the conversion, "
        "as `build` does for accuracy), and PyTorch's time on this host would be no figure of the artifact"
    )
    options_type = EspDlOptions
    # measure --flash: build and flash with ESP-IDF's idf.py, or flash a build the user made (board.py).
    serial_flash_modes = ("idf", "prebuilt")
    # The worker's stage durations; the .espdl and model.json are byte-identical between builds
    # (the worker seeds esp-ppq's config numbering, which esp-ppq seeds from the clock).
    variation = Variation(time_fields={"work/convert/result.json": ("result.timings_s",)})

    def calibration_need(self, chip, precision) -> CalibrationNeed:
        from edgedeploy.targets.espdl.worker_verdict import MIN_CALIB_STEPS

        # esp-ppq 1.3.12 asserts "Insufficient Calibration Detected" below MIN_CALIB_STEPS steps;
        # one sample per step is the least data that satisfies it.
        return CalibrationNeed(True, MIN_CALIB_STEPS, f"esp-ppq {ESP_PPQ_VERSION} calibrates {precision} in at least {MIN_CALIB_STEPS} steps")

    def build_request(self, ctx):
        """esp-ppq's worker request: quantise, export the .espdl, simulate the evaluation inputs (convert.py)."""
        return self.module("convert").build_request(ctx)

    def read_result(self, ctx, result):
        """The .espdl, esp-ppq's verdict (.info), the quantisation report and the simulated outputs (convert.py)."""
        return self.module("convert").read_result(ctx, result)

    def simulate(self, ctx, converted, evaluation):
        """esp-ppq's quantised simulation of the evaluation inputs, computed in the conversion worker:
        its quantised graph exists only there."""
        return converted.simulated

    def codegen(self, ctx, converted):
        from edgedeploy.targets.espdl.codegen import codegen

        return codegen(ctx, converted)

    @property
    def board_setup_worst_case_s(self) -> float:
        """Building the firmware with idf.py, then flashing it: board.py's two time limits."""
        from edgedeploy.targets.espdl.board import FLASH_TIMEOUT_S, IDF_BUILD_TIMEOUT_S

        return float(IDF_BUILD_TIMEOUT_S + FLASH_TIMEOUT_S)

    def report_sections(self, report, artifact) -> list:
        """esp-ppq's worst-quantised layers (report.py)."""
        from edgedeploy.targets.espdl.report import report_sections

        return report_sections(report, artifact)

    def repair_knobs(self, chip, precision, options) -> list:
        """What `build --recover` may change in esp-ppq's quantisation, cheapest first."""
        if precision != "int8":
            return []
        return [
            RepairKnob("calib_method", ("minmax", "percentile", "mse"), "calibration", "esp-ppq's calib_algorithm for the activations' ranges (its default: kl)"),
            RepairKnob(
                "calib_method", (), "per-channel", "per-channel weight scales",
                # esp-ppq's EspdlQuantizer fixes the granularity by platform, with no setting to change it.
                unavailable=(
                    f"already per channel (esp-ppq {ESP_PPQ_VERSION} quantises the ESP32-P4's Conv and Gemm weights per channel)"
                    if chip.id == "esp32p4"
                    else f"esp-ppq {ESP_PPQ_VERSION} quantises {chip.name} weights per tensor (one power-of-two exponent), with no setting to change it"
                ),
            ),
            RepairKnob("equalization", (True,), "equalisation", "esp-ppq's layer-wise equalisation (QuantizationSetting.equalization)"),
            RepairKnob("bias_correction", (True,), "bias-correction", "esp-ppq's bias correction (QuantizationSetting.bias_correct)"),
            RepairKnob(
                "int16_layers", RANKED_NODES, "mixed-precision", "the nodes the diagnosis ranks first dispatched to int16 (esp-ppq's dispatching table)",
                max_nodes=8, producers=True, unavailable="--espdl-int16-layers auto already chose the int16 layers" if any(str(v).startswith("auto") for v in options.int16_layers) else "",
            ),
        ]

    def gate_figures(self, report) -> dict:
        """flash: the .espdl's bytes where codegen placed the model in flash (flash_rodata or a partition)."""
        codegen = report.get("codegen") or {}
        location = str(codegen.get("model_location") or "")
        if location.startswith("flash") and codegen.get("model_size_bytes") is not None:
            return {"flash": (float(codegen["model_size_bytes"]), f"codegen.model_size_bytes (the model in {location})")}
        return {}

    def measure_serial(self, artifact, manifest, device, **options) -> dict:
        """Flash the artifact's firmware (idf.py where ESP-IDF is installed, or binaries the user built) and
        read its result lines over the serial port: see board.measure_on_board for the options and result."""
        from edgedeploy.targets.espdl.board import measure_on_board

        return measure_on_board(artifact, manifest, device, **options)

    def accuracy_taps(self, request):
        """esp-ppq's quantised graph tapped per op (targets/espdl/diagnose.py)."""
        from edgedeploy.targets.espdl.diagnose import accuracy_taps

        return accuracy_taps(self, request)

    def bench_backends(self) -> list:
        """esp-ppq simulates numerics only: listed, with the reason, never timed."""
        from edgedeploy.measure.backends import Backend

        return [
            Backend.untimed_simulator(
                "espdl-sim",
                "ESP-DL quantised simulation (esp-ppq)",
                "npu-simulator",
                why="esp-ppq simulates the quantised numerics on the host and reports no time; time it on the chip with `edgedeploy measure`",
            )
        ]

    chips = chip_table(
        "id name accelerator cpu cpu_clock_mhz memory notes",
        (
            "esp32s3", "ESP32-S3", "Xtensa LX7 AI vector instructions (no NPU)", "2x Xtensa LX7", 240,
            {"sram_bytes": 512 * 1024, "psram_bytes": 8 * 1024 * 1024, "flash_bytes": 8 * 1024 * 1024},
            "memory: ESP32-S3-DevKitC-1 N8R8 (8 MB octal PSRAM, 8 MB flash)",
        ),
        (
            "esp32p4", "ESP32-P4", "RISC-V AI/SIMD (PIE) extensions (no NPU)", "2x RISC-V HP", 400,
            {"sram_bytes": 768 * 1024, "psram_bytes": 32 * 1024 * 1024, "flash_bytes": 16 * 1024 * 1024},
            "memory: ESP32-P4-Function-EV-Board (32 MB PSRAM, 16 MB flash)",
        ),
        accelerator_clock_mhz=None,
        precisions=("int8", "int16"),
        toolchain_version=f"esp-dl {ESP_DL_VERSION} / esp-ppq {ESP_PPQ_VERSION}",
        fallback_unit="CPU (scalar)",
    )

    def toolchain_verdicts(self, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, *, precision=None, inputs=None, **options) -> list:
        """esp-ppq's verdict on many models in one worker process (imports torch and esp-ppq once).

        `inputs`: one .npz per model (or None for random data), or a single .npz for all.
        """
        from edgedeploy.targets.espdl.verdict import run_verdicts

        self.chip(chip_id)  # KeyError for a chip this target does not have
        return run_verdicts(self.toolchain, model_paths, chip_id, workdir, log_path, inputs=inputs, precision=precision or "int8", **options)


TARGET = EspDlTarget()

