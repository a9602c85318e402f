"""The backends `edgedeploy bench` can time on this machine, and the `torch` toolchain environment.

Each backend runs its sessions as subprocesses with its own interpreter:
  ort-*      ONNX Runtime (a core dependency): the core's interpreter; one backend per
             execution provider this onnxruntime build has (ort-cpu always).
  torch-*    PyTorch eager and torch.compile, from the ONNX model through onnx2torch or from a
             torch.export `.pt2`: the `torch` environment (`edgedeploy toolchain install torch`)
             or an interpreter the user names (--torch-python), e.g. on a GPU machine with its
             own CUDA build of torch. CUDA variants exist where torch.cuda.is_available().
  tflite-cpu The ONNX model converted by onnx2tf and run by ai_edge_litert: the `eiq` environment.
  *-sim      The vendor toolchains' simulators. None of them reports a time (checked, see
             SIMULATORS), so bench lists them as skipped with the reason instead of timing a
             host process and calling it an NPU latency.

The worker files next to this module run inside those interpreters and never import edgedeploy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.toolchains import RequirementStep, VenvToolchain

HERE = Path(__file__).parent
ORT_WORKER = HERE / "worker_ort.py"
TORCH_WORKER = HERE / "worker_torch.py"
TFLITE_WORKER = HERE / "worker_tflite.py"

TORCH_TOOLCHAIN = VenvToolchain(
    name="torch",
    description="PyTorch 2.13 + onnx2torch: the eager and torch.compile backends of `edgedeploy bench`",
    steps=(RequirementStep(HERE / "requirements" / "torch.txt"),),
    # onnx2torch is imported by the bench probe (worker_torch.import_onnx2torch), which first
    # copes with a torchvision wheel built for another torch; a plain import would fail there.
    import_modules=("torch",),
    distributions=("torch", "torchvision", "onnx2torch", "onnx", "numpy"),
)

# Toolchain environments that belong to measurement rather than to a target; the registry
# (edgedeploy.targets.all_toolchains) lists them after the targets' own.
TOOLCHAINS = (TORCH_TOOLCHAIN,)


@dataclass(frozen=True)
class Backend:
    """One way to run the model here. `kind` is "runtime" or "simulator"; `unit` where it computes."""

    name: str
    label: str
    family: str  # ort | torch | tflite | simulator
    unit: str  # cpu | cuda | ...
    kind: str = "runtime"
    options: dict = field(default_factory=dict, hash=False)

    def describe(self) -> dict:
        return {"name": self.name, "label": self.label, "family": self.family, "unit": self.unit, "kind": self.kind}


# ONNX Runtime execution providers by their short names; others get their name lower-cased.
ORT_PROVIDER_NAMES = {
    "CPUExecutionProvider": ("ort-cpu", "cpu"),
    "CUDAExecutionProvider": ("ort-cuda", "cuda"),
    "TensorrtExecutionProvider": ("ort-tensorrt", "cuda"),
    "OpenVINOExecutionProvider": ("ort-openvino", "openvino"),
    "DmlExecutionProvider": ("ort-dml", "directml"),
    "CoreMLExecutionProvider": ("ort-coreml", "coreml"),
    "ROCMExecutionProvider": ("ort-rocm", "rocm"),
    "MIGraphXExecutionProvider": ("ort-migraphx", "rocm"),
    "QNNExecutionProvider": ("ort-qnn", "npu"),
    "XnnpackExecutionProvider": ("ort-xnnpack", "cpu"),
    "AzureExecutionProvider": ("ort-azure", "remote"),
}
# Providers that are in the build but do not compute here.
ORT_NOT_LOCAL = {"AzureExecutionProvider": "it sends the model to a remote Azure endpoint; it is not a local compute provider"}

TORCH_VARIANTS = (
    Backend("torch-eager-cpu", "PyTorch eager, CPU", "torch", "cpu", options={"device": "cpu", "mode": "eager"}),
    Backend("torch-compile-cpu", "torch.compile (default mode), CPU", "torch", "cpu", options={"device": "cpu", "mode": "compile"}),
    Backend("torch-eager-cuda", "PyTorch eager, CUDA", "torch", "cuda", options={"device": "cuda", "mode": "eager"}),
    Backend("torch-compile-cuda", "torch.compile (default mode), CUDA", "torch", "cuda", options={"device": "cuda", "mode": "compile"}),
    Backend(
        "torch-compile-cudagraphs-cuda",
        'torch.compile (mode="reduce-overhead": CUDA graphs), CUDA',
        "torch",
        "cuda",
        options={"device": "cuda", "mode": "compile-cudagraphs"},
    ),
    # The loop a tuned hand-written benchmark uses: the module captured once in a
    # torch.cuda.CUDAGraph, inputs copied into its static buffers and the graph replayed per
    # call (worker_torch.CapturedGraph); and the same around torch.compile's default mode.
    Backend("torch-eager-capture-cuda", "PyTorch eager captured in one CUDA graph (torch.cuda.graph), CUDA", "torch", "cuda", options={"device": "cuda", "mode": "eager-capture"}),
    Backend("torch-compile-capture-cuda", "torch.compile (default mode) captured in one CUDA graph, CUDA", "torch", "cuda", options={"device": "cuda", "mode": "compile-capture"}),
)
TFLITE = Backend("tflite-cpu", "TFLite (onnx2tf + ai_edge_litert, XNNPACK), CPU", "tflite", "cpu")

# The vendor simulators and what was found when each was checked for timing. None reports a
# time: listing them with the reason is the honest answer; timing their host process is not.
SIMULATORS = (
    (
        Backend("rknn-sim", "RKNN simulator (rknn-toolkit2)", "simulator", "npu-simulator", kind="simulator", options={"toolchain": "rknn"}),
        "the RKNN simulator reports no time: rknn-toolkit2 2.5.0 refuses eval_perf and eval_memory without a board "
        "('Not support in simulator environment'), and its host wall time is not an NPU latency; time it on a board with `edgedeploy measure`",
    ),
    (
        Backend("espdl-sim", "ESP-DL quantised simulation (esp-ppq)", "simulator", "npu-simulator", kind="simulator", options={"toolchain": "espdl"}),
        "esp-ppq simulates the quantised numerics on the host and reports no time; time it on the chip with `edgedeploy measure`",
    ),
    (
        Backend("vela-estimate", "Arm Vela performance estimate (Ethos-U65)", "simulator", "npu-estimate", kind="simulator", options={"toolchain": "eiq"}),
        "Vela estimates time only for a full-int8 TFLite model compiled for the Ethos-U; `edgedeploy build --target imx93` reports it, labelled as an estimate",
    ),
)


def ort_backends(available_providers: list[str]) -> list[Backend]:
    """One backend per execution provider of this onnxruntime build, CPU first."""
    found = []
    for provider in available_providers:
        name, unit = ORT_PROVIDER_NAMES.get(provider, ("ort-" + provider.replace("ExecutionProvider", "").lower(), provider.replace("ExecutionProvider", "").lower()))
        label = "ONNX Runtime " + provider.replace("ExecutionProvider", "")
        found.append(Backend(name, label, "ort", unit, options={"provider": provider}))
    found.sort(key=lambda b: (b.name != "ort-cpu", b.name))
    return found


def catalogue(available_providers: list[str]) -> list[Backend]:
    """Every backend bench knows on this machine, installed or not, in display order."""
    ort = ort_backends(available_providers)
    if not any(b.name == "ort-cpu" for b in ort):
        ort.insert(0, Backend("ort-cpu", "ONNX Runtime CPU", "ort", "cpu", options={"provider": "CPUExecutionProvider"}))
    return ort + list(TORCH_VARIANTS) + [TFLITE] + [sim for sim, _ in SIMULATORS]


def known_names(available_providers: list[str]) -> list[str]:
    names = [b.name for b in catalogue(available_providers)]
    # The CUDA provider is named even where this onnxruntime build lacks it, so that asking
    # for it explains itself instead of being "unknown".
    for name, _ in ORT_PROVIDER_NAMES.values():
        if name not in names:
            names.append(name)
    return names
