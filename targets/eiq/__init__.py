"""NXP eIQ: ONNX -> int8 TFLite (onnx2tf), then Vela for the i.MX 93's Ethos-U65, or the VX
delegate for the i.MX 8M Plus NPU. Conversion runs in the `eiq` toolchain environment.
"""

from dataclasses import dataclass
from pathlib import Path

from edgedeploy.errors import OptionError
from edgedeploy.targets.base import RANKED_NODES, Capability, RepairKnob, Target, TargetOptions, chip_table, node_names_option, option
from edgedeploy.reproducible import Variation
from edgedeploy.toolchains import RequirementStep, VenvToolchain

_REQ = Path(__file__).parent / "requirements"

ONNX2TF_VERSION = "1.29.24"
VELA_VERSION = "5.2.0"

# Vela's system and memory configuration for the i.MX 93. NXP's eIQ compiles with NXP's fork of
# Vela, whose default (no --config) is the class Imx93ArchitectureFeatures in ethosu/vela/vela.py
# and ArchitectureFeatures._set_default_mem_mode (nxp-imx/ethos-u-vela, branch lf-6.6.3_1.0.0,
# commit a6f6566, Vela 3.10.0): ethos-u65-256, core clock 1 GHz, SRAM on AXI0 and DRAM on AXI1,
# DRAM clock scale 0.234375, burst lengths 32 (SRAM) / 128 (DRAM), latencies 32/32 (SRAM) and
# 500/250 (DRAM read/write), "Dedicated SRAM" memory mode with a 384 KiB arena cache. Those are
# exactly Arm's `Ethos_U65_High_End` system config with the `Dedicated_Sram_384KB` memory mode
# in the Arm/vela.ini that ships with ethos-u-vela 5.2.0 (which adds max outstanding
# transactions the fork's model did not have), so upstream Vela 5.2.0 is run with those.
VELA_IMX93 = {
    "accelerator_config": "ethos-u65-256",
    "config": "Arm/vela.ini",
    "system_config": "Ethos_U65_High_End",
    "memory_mode": "Dedicated_Sram_384KB",
}

TOOLCHAIN = VenvToolchain(
    name="eiq",
    description="onnx2tf + TensorFlow Lite (ai-edge-litert) + Arm Vela for NXP i.MX",
    steps=(RequirementStep(_REQ / "eiq-deps.txt"), RequirementStep(_REQ / "eiq-converter.txt", no_deps=True)),
    import_modules=("onnx2tf", "ethosu.vela", "ai_edge_litert.interpreter"),
    distributions=("onnx2tf", "tensorflow-cpu", "ethos-u-vela", "ai-edge-litert", "onnx", "numpy"),
)


@dataclass(frozen=True)
class EiqOptions(TargetOptions):
    activations: str | None = option(
        "--eiq-activations",
        "int8 (the default) or int16: TFLite's 16x8 mode, int16 activations with int8 weights (onnx2tf's "
        "full_integer_quant_with_int16_act settings); Vela runs int16 for fewer operators than int8.",
        choices=("int8", "int16"),
    )
    float_nodes: tuple[str, ...] = node_names_option(
        "--eiq-float-nodes",
        "Keep these ONNX nodes' operators in float (the TFLite converter's denylisted_nodes, as its QuantizationDebugger "
        "does): they run on the CPU, not the NPU; names separated by commas or the option repeated.",
    )

    def validate(self, chip) -> None:
        if self.activations == "int16" and self.float_nodes:
            raise OptionError("--eiq-float-nodes and --eiq-activations int16 cannot be combined: the TFLite converter's 16x8 mode has no denylist.")


class EiqTarget(Target):
    id = "eiq"
    vendor = "NXP"
    name = "NXP eIQ"
    toolchain = TOOLCHAIN
    listing_order = 30
    options_type = EiqOptions
    # The durations of onnx2tf, the quantiser and Vela (docs/reliability.md, "Reproducible artifacts").
    variation = Variation(time_fields={"report.json": ("conversion.seconds", "conversion.wall_seconds")})
    # Vela's performance model, run by every int8 build for the i.MX 93 (vela.py); experimental by Arm's own word.
    toolchain_latency_estimate = {"imx93": "Vela"}
    capabilities = frozenset({Capability.AUDIT, Capability.SIMULATE, Capability.RUNNER, Capability.VERDICT, Capability.BENCH, Capability.HOST, Capability.DIAGNOSE})
    chips = chip_table(
        "id name accelerator cpu cpu_clock_mhz toolchain_version",
        (
            "imx8mp", "i.MX 8M Plus", "VeriSilicon VIP8000 NPU (2.3 TOPS), TFLite VX delegate", "4x Cortex-A53", 1800,
            f"onnx2tf {ONNX2TF_VERSION}; VX delegate op list lf-6.6.3_1.0.0",
        ),
        (
            "imx93", "i.MX 93", "Arm Ethos-U65-256 NPU (0.5 TOPS)", "2x Cortex-A55", 1700,
            f"onnx2tf {ONNX2TF_VERSION}; Vela {VELA_VERSION}",
            {"memory": {"npu_sram_bytes": 384 * 1024}},
        ),
        accelerator_clock_mhz=1000,
        precisions=("int8",),
    )


    def rule_set_variants(self, chip_id: str) -> list[dict]:
        """The other rule tables of a chip (the rules package), default first."""
        return self.module("rules").rule_set_variants(chip_id)

    def build_request(self, ctx):
        """The eiq worker's request: the model with node-name tokens, the calibration data (convert.py)."""
        return self.module("convert").build_request(ctx)

    def read_result(self, ctx, result):
        """onnx2tf float32 + full-int8 TFLite, Vela for the i.MX 93; the toolchain's verdict (convert.py)."""
        return self.module("convert").read_result(ctx, result)

    def explain_failure(self, ctx, request, failure):
        """onnx2tf's failure with the user's node names and the known remedy (convert.py)."""
        return self.module("convert").explain_failure(ctx, request, failure)

    def simulate(self, ctx, converted, evaluation):
        """The int8 TFLite in the TFLite CPU interpreter (and the float32 one beside it)."""
        from edgedeploy.targets.eiq.convert import simulate

        return simulate(self, ctx, converted, evaluation)

    def codegen(self, ctx, converted):
        from edgedeploy.targets.eiq.runner import codegen

        return codegen(ctx, converted)

    def repair_knobs(self, chip, precision, options) -> list:
        """What `build --recover` may change in the TFLite converter's quantisation (worker.py's
        quantize_full_int8), with the converter's reason where it has no such means."""
        if precision != "int8":
            return []
        wide = options.activations == "int16"
        return [
            RepairKnob("", (), "calibration", "the calibration method", unavailable="the TFLite converter calibrates by min/max only (its calibrator records each tensor's minimum and maximum over the representative dataset); it offers no other method"),
            RepairKnob("", (), "per-channel", "per-channel weight scales", unavailable="already per channel (the build's TFLite converter quantises Conv and FullyConnected weights per channel)"),
            RepairKnob("", (), "equalisation", "equalisation", unavailable="the TFLite converter has no equalisation"),
            RepairKnob("", (), "bias-correction", "bias correction", unavailable="the TFLite converter has no bias correction"),
            RepairKnob(
                "float_nodes", RANKED_NODES, "mixed-precision",
                "the nodes the diagnosis ranks first kept in float (the converter's denylisted_nodes): on the CPU, not the NPU", max_nodes=8,
                unavailable="the build is in 16x8 already (--eiq-activations int16), which has no denylist" if wide else "",
            ),
            RepairKnob(
                "activations", ("int16",), "mixed-precision", "every activation in int16, weights int8 (TFLite's 16x8 mode)", every_node=True,
                unavailable="the build is in 16x8 already" if wide else "",
            ),
        ]

    def repair_costs(self, report) -> dict:
        """Where the operators of an attempt run and Vela's time estimate (i.MX 93): a node left in float runs on the CPU."""
        from edgedeploy.targets.eiq.report import vela_estimates

        vela = report.get("vela")
        if not isinstance(vela, dict):
            return {}
        estimates = vela_estimates(report) or {}
        return {
            "npu_operators": vela.get("npu_operator_count"),
            "cpu_operators": vela.get("cpu_operator_count"),
            "npu_time_us_vela_estimate": estimates.get("estimated_inference_time_us"),
        }

    def accuracy_taps(self, request):
        """The float32 and int8 TFLite models tapped tensor by tensor (targets/eiq/diagnose.py)."""
        from edgedeploy.targets.eiq.diagnose import accuracy_taps

        return accuracy_taps(self, request)

    def bench_backends(self) -> list:
        """The ONNX model through onnx2tf on the TFLite CPU interpreter; Vela's estimate listed, not timed."""
        from edgedeploy.measure.backends import Backend

        return [
            Backend(
                "tflite-cpu",
                "TFLite (onnx2tf + ai_edge_litert, XNNPACK), CPU",
                "tflite",
                "cpu",
                toolchain=TOOLCHAIN,
                worker=Path(__file__).with_name("worker_bench.py"),
                precisions=("fp32",),
            ),
            Backend.untimed_simulator(
                "vela-estimate",
                "Arm Vela performance estimate (Ethos-U65)",
                "npu-estimate",
                why="Vela estimates time only for a full-int8 TFLite model compiled for the Ethos-U; `edgedeploy build --target imx93` reports it, labelled as an estimate",
            ),
        ]

    def report_sections(self, report, artifact) -> list:
        """Vela's memory estimates (report.py)."""
        from edgedeploy.targets.eiq.report import report_sections

        return report_sections(report, artifact)

    def gate_figures(self, report) -> dict:
        """ram: the SRAM Vela estimates the Ethos-U uses (i.MX 93; the chips without Vela give none)."""
        from edgedeploy.targets.eiq.report import vela_estimates

        estimates = vela_estimates(report) or {}
        if estimates.get("sram_used_bytes") is None:
            return {}
        return {"ram": (float(estimates["sram_used_bytes"]), f"vela.estimates.sram_used_bytes (Vela's estimate, {estimates.get('memory_mode') or '?'})")}

    def host_runner_spec(self, artifact, manifest, settings, stage_dir):
        """The int8 and float32 TFLite models on this machine's TFLite interpreter (CPU), in the eiq environment."""
        from edgedeploy.targets.eiq.runner import host_runner_spec

        return host_runner_spec(self, Path(artifact), manifest, settings)

    def runner_spec(self, artifact, manifest, device):
        """int8 with the NPU delegate (CPU fallback with a warning); baseline: the float32 model on the CPU."""
        from edgedeploy.targets.eiq.runner import runner_spec

        return runner_spec(self, Path(artifact), manifest, device)

    def toolchain_verdicts(self, model_paths, chip_id, workdir, log_path, precision=None, inputs=None, per_model_timeout_s=None, keep_files=False, **options):
        """Verdicts for many models through one eiq worker (TensorFlow starts once).

        `inputs`: per model, calibration inputs as an .npz keyed by input name (or a dict of
        arrays, or None for fixed-seed generated inputs), as a list aligned with model_paths
        or a dict keyed by path. `precision`: only int8 (the full-integer TFLite the NPUs run).
        """
        from edgedeploy.errors import OptionError
        from edgedeploy.targets.eiq.confirm import PER_MODEL_TIMEOUT_S, run_verdicts

        if precision not in (None, "int8"):
            raise OptionError(f"The eIQ targets build full-int8 TFLite models; precision {precision} is not available.")
        calibration = inputs if inputs is not None else options.get("calibration")
        return run_verdicts(
            self,
            list(model_paths),
            chip_id,
            Path(workdir),
            Path(log_path),
            calibration=calibration,
            per_model_timeout_s=per_model_timeout_s or PER_MODEL_TIMEOUT_S,
            keep_files=keep_files,
        )


def vela_version() -> str:
    """The versions the verdicts come from, as recorded when the environment was installed."""
    versions = TOOLCHAIN.status().versions
    return f"onnx2tf {versions.get('onnx2tf', ONNX2TF_VERSION)}, Vela {versions.get('ethos-u-vela', VELA_VERSION)}"


TARGET = EiqTarget()
