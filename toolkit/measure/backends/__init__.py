"""The backends `edgedeploy bench` can time on this machine, and the `torch` toolchain environment.

Each backend runs its sessions as subprocesses with its own interpreter:
  ort-*      ONNX Runtime (a core dependency): the core's interpreter; one backend per
             execution provider this onnxruntime build has (ort-cpu always).
  torch-*    PyTorch eager and torch.compile, from the ONNX model through onnx2torch or from a
             torch.export `.pt2`: the `torch` environment (`edgedeploy toolchain install torch`)
             or an interpreter the user names (--torch-python), e.g. on a GPU machine with its
             own CUDA build of torch. CUDA variants exist where torch.cuda.is_available().
  target's  Backends a target declares (Target.bench_backends): e.g. tflite-cpu (onnx2tf + the
             TFLite interpreter, the eIQ target's environment), and the vendor simulators,
             none of which reports a time (`not_timed` says why), so bench lists them as
             skipped with the reason instead of timing a host process and calling it an NPU
             latency. The core names no target: the pipeline gathers them from the registry.

The worker files next to this module run inside those interpreters and never import edgedeploy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edgedeploy.toolchains import RequirementStep, VenvToolchain

HERE = Path(__file__).parent
ORT_WORKER = HERE / "worker_ort.py"
TORCH_WORKER = HERE / "worker_torch.py"

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
    """One way to run the model here. `kind` is "runtime" or "simulator"; `unit` where it computes.

    A target's backend names its `toolchain` (the environment its worker runs in) and `worker`:
    a worker module with a "convert" action (the ONNX model -> what the sessions load; its
    result is merged into every session request) and a "session" action (one latency
    session, measure/protocol.py's result). `precisions` are those it can time; `not_timed`
    is why a backend is listed but never timed (a simulator that reports no time).
    """

    name: str
    label: str
    family: str  # ort | torch | tflite | simulator
    unit: str  # cpu | cuda | ...
    kind: str = "runtime"
    options: dict = field(default_factory=dict, hash=False)
    toolchain: object = field(default=None, hash=False, compare=False)
    worker: Path | None = None
    precisions: tuple[str, ...] = ("fp32",)
    not_timed: str | None = None

    @classmethod
    def untimed_simulator(cls, name: str, label: str, unit: str, why: str) -> "Backend":
        """A target's simulator that `edgedeploy bench` lists with `why` it reports no time, and never times."""
        return cls(name, label, "simulator", unit, kind="simulator", not_timed=why)

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
def ort_backends(available_providers: list[str]) -> list[Backend]:
    """One backend per execution provider of this onnxruntime build, CPU first."""
    found = []
    for provider in available_providers:
        name, unit = ORT_PROVIDER_NAMES.get(provider, ("ort-" + provider.replace("ExecutionProvider", "").lower(), provider.replace("ExecutionProvider", "").lower()))
        label = "ONNX Runtime " + provider.replace("ExecutionProvider", "")
        found.append(Backend(name, label, "ort", unit, options={"provider": provider}))
    found.sort(key=lambda b: (b.name != "ort-cpu", b.name))
    return found


def catalogue(available_providers: list[str], declared: list[Backend] = ()) -> list[Backend]:
    """Every backend bench knows on this machine, installed or not, in display order.

    `declared`: the targets' own backends (the pipeline gathers them from the registry);
    runtimes come before the simulators that are only listed.
    """
    ort = ort_backends(available_providers)
    if not any(b.name == "ort-cpu" for b in ort):
        ort.insert(0, Backend("ort-cpu", "ONNX Runtime CPU", "ort", "cpu", options={"provider": "CPUExecutionProvider"}))
    timed = [b for b in declared if b.not_timed is None]
    listed = [b for b in declared if b.not_timed is not None]
    return ort + list(TORCH_VARIANTS) + timed + listed


def known_names(available_providers: list[str], declared: list[Backend] = ()) -> list[str]:
    names = [b.name for b in catalogue(available_providers, declared)]
    # The CUDA provider is named even where this onnxruntime build lacks it, so that asking
    # for it explains itself instead of being "unknown".
    for name, _ in ORT_PROVIDER_NAMES.values():
        if name not in names:
            names.append(name)
    return names
