"""RKNN: Rockchip's NPU toolchain (rknn-toolkit2) for the RK35xx and RV110x chips.

Conversion and the simulator run in the `rknn` toolchain environment; on the board the model
runs with rknn-toolkit-lite2 (Python) or the rknn_api C library.
"""

from dataclasses import dataclass
from pathlib import Path

from edgedeploy.targets.base import RANKED_NODES, RepairKnob, Capability, Target, TargetOptions, chip_table, node_names_option, option
from edgedeploy.reproducible import Variation
from edgedeploy.toolchains import RequirementStep, VenvToolchain

_REQ = Path(__file__).parent / "requirements"

RKNN_TOOLKIT_VERSION = "2.5.0"
# The operator documents in shared/reference/rknn describe this release.
RKNN_DOC_VERSION = "2.3.2"

TOOLCHAIN = VenvToolchain(
    name="rknn",
    description="rknn-toolkit2: conversion to .rknn, the simulator and accuracy analysis",
    steps=(RequirementStep(_REQ / "rknn-deps.txt"), RequirementStep(_REQ / "rknn-toolkit.txt", no_deps=True)),
    import_modules=("rknn.api",),
    distributions=("rknn-toolkit2", "torch", "onnx", "onnxruntime", "numpy"),
)

_VERSION = f"rknn-toolkit2 {RKNN_TOOLKIT_VERSION} (rules: RKNN docs {RKNN_DOC_VERSION})"


@dataclass(frozen=True)
class RknnOptions(TargetOptions):
    optimization_level: int | None = option("--rknn-optimization-level", "rknn-toolkit2's optimization_level (0-3; default 3, all optimisations).", type=int, minimum=0, maximum=3, deprecated=("--optimization-level",))
    quantized_algorithm: str | None = option(
        "--rknn-quantized-algorithm",
        "rknn-toolkit2's quantized_algorithm for the activations' ranges: normal (its default, min/max), mmse or kl_divergence.",
        choices=("normal", "mmse", "kl_divergence"),
    )
    quantized_method: str | None = option(
        "--rknn-quantized-method",
        "rknn-toolkit2's quantized_method: channel (its default, one weight scale per output channel) or layer (one per tensor).",
        choices=("channel", "layer"),
    )
    float16_nodes: tuple[str, ...] = node_names_option(
        "--rknn-float16-nodes",
        "Hybrid quantisation: keep these ONNX nodes in float16, the rest int8 (rknn-toolkit2's hybrid_quantization_step1 "
        "custom_hybrid, then step2); names separated by commas or the option repeated.",
    )
    analyse: bool = option("--rknn-analyse", "Run rknn-toolkit2's per-layer accuracy_analysis and map it to ONNX node names (needs --eval).", is_flag=True, deprecated=("--analyse",))


class RknnTarget(Target):
    id = "rknn"
    vendor = "Rockchip"
    name = "RKNN"
    toolchain = TOOLCHAIN
    TOOLKIT_VERSION = RKNN_TOOLKIT_VERSION
    listing_order = 20
    capabilities = frozenset({Capability.AUDIT, Capability.SIMULATE, Capability.RUNNER, Capability.VERDICT, Capability.BENCH, Capability.DIAGNOSE})
    host_unavailable = (
        "model.rknn runs only on the NPU's runtime (librknnrt on the board); rknn-toolkit2 2.5.0's simulator refuses a model "
        "loaded from a .rknn file ('RKNN model that loaded by load_rknn not support inference on the simulator') "
        "and reports no time (eval_perf needs a board)"
    )
    options_type = RknnOptions
    # rknn_build_output.txt is the toolkit's log (clock times, progress bars), so the report's
    # size of it varies too. The .rknn differs on every build (docs/reliability.md, "Reproducible
    # artifacts"): no normalisation of it is known to be sound, so it is declared not reproducible.
    variation = Variation(
        time_files=("rknn_build_output.txt",),
        time_fields={"report.json": ("convert.size_bytes.layer_table",), "work/convert/result.json": ("result.simulator_seconds",)},
        not_reproducible={
            "model.rknn": (
                "rknn-toolkit2 writes uninitialised memory into the file: two builds of the sample differ in about 1.5 KB, "
                "in two of its data segments (all but their first 32 bytes) and in host addresses inside per-layer tables; "
                "no normalisation is known to be sound, so it is not compared between builds"
            )
        },
    )
    chips = chip_table(
        "id name accelerator cpu cpu_clock_mhz",
        ("rk3588", "RK3588", "RKNPU (6 TOPS int8)", "4x Cortex-A76 + 4x Cortex-A55", 2400, {"notes": "3 NPU cores"}),
        ("rk3576", "RK3576", "RKNPU (6 TOPS int8)", "4x Cortex-A72 + 4x Cortex-A53", 2200, {"notes": "2 NPU cores"}),
        ("rk3568", "RK3568", "RKNPU (1 TOPS int8)", "4x Cortex-A55", 2000),
        ("rk3566", "RK3566", "RKNPU (1 TOPS int8)", "4x Cortex-A55", 1800),
        ("rk3562", "RK3562", "RKNPU (1 TOPS int8)", "4x Cortex-A53", 2000),
        (
            "rv1106", "RV1106", "RKNPU (0.5 TOPS int8)", "1x Cortex-A7", 1200,
            {"precisions": ("int8",), "memory": {"dram_bytes": 256 * 1024 * 1024}, "notes": "int8 only; RV1106G3 has 256 MB of in-package DRAM"},
        ),
        accelerator_clock_mhz=None,
        precisions=("int8", "fp16"),
        toolchain_version=_VERSION,
    )


    def rule_set_variants(self, chip_id: str) -> list[dict]:
        """The int8 and fp16 tables of a chip (rules.py), default first."""
        return self.module("rules").rule_set_variants(chip_id)

    def build_request(self, ctx):
        """rknn-toolkit2's worker request: the model, the staged calibration and evaluation data (convert.py)."""
        return self.module("convert").build_request(ctx)

    def read_result(self, ctx, result):
        """The .rknn, its layer table (the verdict) and the simulator's outputs (convert.py)."""
        return self.module("convert").read_result(self, ctx, result)

    def explain_failure(self, ctx, request, failure):
        """The node behind a tensor rknn-toolkit2's error quotes (convert.py)."""
        return self.module("convert").with_failing_node(failure, ctx.model.graph)

    def simulate(self, ctx, converted, evaluation):
        """The RKNN simulator's outputs, computed in the conversion worker (it needs the in-memory build)."""
        return converted.simulated

    def codegen(self, ctx, converted):
        from edgedeploy.targets.rknn.codegen import codegen

        return codegen(ctx, converted)

    def toolchain_verdicts(self, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, *, precision=None, inputs=None, **options) -> list:
        from edgedeploy.targets.rknn.verdict import toolchain_verdicts

        return toolchain_verdicts(self, list(model_paths), chip_id, workdir, log_path, precision=precision or "int8", inputs=inputs, **options)

    def runner_spec(self, artifact: Path, manifest: dict, device):
        from edgedeploy.targets.rknn.runner import runner_spec

        return runner_spec(self, Path(artifact), manifest, device)

    def repair_knobs(self, chip, precision, options) -> list:
        """What `build --recover` may change in rknn-toolkit2's quantisation, cheapest first."""
        if precision != "int8":
            return []
        per_channel = ("channel",) if options.quantized_method == "layer" else ()
        # The build as asked already used its algorithm (None: rknn-toolkit2's default, normal): not tried again.
        algorithms = tuple(a for a in ("kl_divergence", "mmse", "normal") if a != (options.quantized_algorithm or "normal"))
        return [
            RepairKnob("quantized_algorithm", algorithms, "calibration", "rknn-toolkit2's quantized_algorithm (its default: normal, min/max); mmse last, its search is the slowest"),
            RepairKnob(
                "quantized_method", per_channel, "per-channel", "rknn-toolkit2's quantized_method='channel'",
                unavailable="" if per_channel else "already per channel (rknn-toolkit2's default quantized_method is 'channel')",
            ),
            RepairKnob(
                "quantized_algorithm", (), "equalisation", "activation equalisation",
                unavailable=f"rknn-toolkit2 {RKNN_TOOLKIT_VERSION}'s config() documents no equalisation setting (it ships an act_equalization module that no documented option reaches)",
            ),
            RepairKnob(
                "quantized_algorithm", (), "bias-correction", "bias correction",
                unavailable=f"rknn-toolkit2 {RKNN_TOOLKIT_VERSION}'s config() documents no bias-correction setting (it ships a bias_correction module that no documented option reaches)",
            ),
            RepairKnob(
                "float16_nodes", RANKED_NODES, "mixed-precision",
                "the nodes the diagnosis ranks first kept in float16 with the nodes writing their inputs (hybrid_quantization_step1 custom_hybrid, then step2)",
                # The toolkit keeps the tensor between two layers int8 unless both are float16: BlazeFace's
                # Conv_77 alone in float16 gave 10.9 dB, with Conv_76 15.6 dB (docs/accuracy.md).
                max_nodes=8, input_producers=True,
            ),
        ]

    def report_sections(self, report, artifact) -> list:
        """rknn-toolkit2's accuracy analysis, with --rknn-analyse (report.py)."""
        from edgedeploy.targets.rknn.report import report_sections

        return report_sections(report, artifact)

    def accuracy_taps(self, request):
        """rknn-toolkit2's accuracy_analysis mapped to ONNX nodes (targets/rknn/diagnose.py)."""
        from edgedeploy.targets.rknn.diagnose import accuracy_taps

        return accuracy_taps(self, request)

    def bench_backends(self) -> list:
        """The RKNN simulator reports no time: listed, with the reason, never timed."""
        from edgedeploy.measure.backends import Backend

        return [
            Backend.untimed_simulator(
                "rknn-sim",
                "RKNN simulator (rknn-toolkit2)",
                "npu-simulator",
                why=(
                    "the RKNN simulator reports no time: rknn-toolkit2 2.5.0 refuses eval_perf and eval_memory without a board "
                    "('Not support in simulator environment'), and its host wall time is not an NPU latency; time it on a board with `edgedeploy measure`"
                ),
            )
        ]


TARGET = RknnTarget()
