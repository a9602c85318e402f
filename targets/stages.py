"""What the core hands a target's build and diagnosis stages, and what it gets back.

Part of the target contract (edgedeploy.targets.base, which these names are imported from as
well): kept in a module of their own because only a build or a diagnosis uses them, and every
command imports targets.base (making these eight dataclasses took about 3 ms of each audit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import numpy as np

    from edgedeploy.audit.confirm import ToolchainVerdict
    from edgedeploy.audit.engine import AuditResult
    from edgedeploy.audit.rules import RuleSet
    from edgedeploy.datasets import Dataset, PreprocessSpec
    from edgedeploy.measure.reference import ReferenceRunner
    from edgedeploy.model import LoadedModel
    from edgedeploy.targets.base import Chip, Target, TargetOptions
    from edgedeploy.toolchains.executor import Executor
    from edgedeploy.toolchains.kinds import WorkerEnvironment


@dataclass
class BuildData:
    """The data of one build, resolved once by the core.

    `calibration` and `evaluation` are the user's (or the bundled sample's, for the sample
    only), in the model's own input domain; `preprocess` is the image spec they were read with
    (the sample's for the sample); `batchable` says whether samples may go through the model
    several at a time (the reference's probe).
    """

    calibration: "Dataset | None"
    evaluation: "Dataset | None"
    preprocess: "PreprocessSpec | None"
    is_sample: bool
    batchable: bool
    notes: list[str] = field(default_factory=list)


@dataclass
class BuildContext:
    """Everything a target's stages get. Files go into `workdir`, the artifact being built."""

    model: "LoadedModel"
    model_path: Path  # workdir/model.onnx: the pinned, checked copy every toolchain reads
    target: "Target"
    chip: Chip
    precision: str  # the precision being built, checked against chip.precisions
    options: TargetOptions  # this target's own options (target.options_type)
    workdir: Path  # absolute; becomes `final_dir` when the build succeeds
    final_dir: Path  # where the artifact will be (for commands printed for the user)
    data: BuildData
    audit: "AuditResult | None"  # the rules' prediction, before conversion (None: the target declares no AUDIT)
    executor: "Executor"  # runs every vendor tool (one time-out, log, process lifecycle)
    reference: "ReferenceRunner"  # ONNX Runtime fp32 on this host, cached per inputs (for runners' expected outputs)
    echo: Callable[[str], None]
    device: str | None = None  # an inventory device to build on (toolchains that run on the device)
    environment: "WorkerEnvironment | None" = None  # where the toolchain's worker runs (toolchains.kinds); None: its managed venv

    @property
    def log_path(self) -> Path:
        return self.executor.log_path

    def work(self, stage: str) -> Path:
        """A scratch folder for one stage's worker (inside the artifact, removed or kept by the target)."""
        path = self.workdir / "work" / stage
        path.mkdir(parents=True, exist_ok=True)
        return path


@dataclass
class SimulationResult:
    """Outputs of the compiled model on the host for the evaluation inputs (samples along axis 0).

    `outputs` by ONNX output name are what the task metric and fidelity are computed on;
    `backend` says what produced them; `extra` holds other candidates worth a fidelity line
    (e.g. the float32 TFLite model: what the conversion alone changed); `unquantised` names the
    extra that is the conversion without quantisation, which should compute what the ONNX model
    does (the core warns where it does not). `failed` is set when
    the check could not run (an interpreter that refused the model): the artifact is kept and
    the failure recorded; `outputs` is then empty.
    """

    outputs: dict[str, "np.ndarray"]
    backend: str
    extra: dict[str, dict[str, "np.ndarray"]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failed: str | None = None
    unquantised: str | None = None


@dataclass
class ConvertRequest:
    """What a target's conversion sends its worker (Target.build_request); the core runs it.

    worker    the worker file (`run(request, ctx) -> dict`, run by worker_main in the toolchain's
              environment); shipped in the target's package
    payload   the JSON request: absolute paths only, arrays staged with edgedeploy.arrays
    stage     the scratch folder under work/ the worker runs in
    announce  the progress line shown before the run
    keep      what read_result needs besides the worker's result (never sent to the worker)
    """

    worker: Path
    payload: dict
    stage: str = "convert"
    announce: str = ""
    keep: dict[str, Any] = field(default_factory=dict)


@dataclass
class WorkerResult:
    """What read_result gets: the request that ran, the worker's result dict, the run's seconds."""

    request: ConvertRequest
    values: dict
    seconds: float


@dataclass
class ConvertResult:
    """What a conversion produced.

    status     "built" (compiled by the toolchain) or "generated" (a project the user compiles
               where the vendor's tools are, e.g. TIDL without TIDL_TOOLS_PATH; `reason` says why)
    toolchain  the tool that converted (e.g. "esp-ppq 1.3.12"); `versions` every version read
    files      role -> file relative to the artifact (e.g. {"model": "model.espdl"})
    verdict    the toolchain's own placement of each ONNX node, or None where it reports none
    rules      the rule table that matches the toolchain actually used (e.g. the device's
               TensorRT version), when it differs from the one audited before conversion: the
               core audits again with it
    sections   target-specific report sections (e.g. "quantization", "vela"), one shape each
    details    target-specific fields of the shared `convert` section
    manifest   target-specific manifest fields (stored under the target's id)
    workarounds documented toolchain workarounds applied automatically: {"name", "why", "source"}
    simulated  outputs on the evaluation inputs when the toolchain simulates during conversion
               (its simulator needs the in-memory build); `simulate` hands them on
    """

    status: str
    toolchain: str
    versions: dict = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    verdict: "ToolchainVerdict | None" = None
    rules: "RuleSet | None" = None
    sections: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    workarounds: list[dict] = field(default_factory=list)
    simulated: SimulationResult | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.status not in ("built", "generated"):
            raise ValueError(f"ConvertResult.status must be 'built' or 'generated', not {self.status!r}")


@dataclass
class TapRequest:
    """What a target's accuracy_taps gets: the artifact's model and build options, and the data, once."""

    artifact: Path
    model_path: Path  # the artifact's pinned model.onnx
    chip: Chip
    precision: str
    manifest: dict  # the artifact's manifest.json (the options the build used)
    calibration: "Dataset"
    evaluation: "Dataset | None"  # the figures are on these inputs when given, else on the calibration data
    workdir: Path
    executor: "Executor"
    tap_helpers: Path  # edgedeploy/accuracy/tap_numpy.py, for the worker to load by path
    echo: Callable[[str], None] = print
    batchable: bool = False  # the model computes each sample of a batch as alone (ONNX Runtime's probe, as at build time)
    # scripts/accuracy/brute_force.py: these graph outputs measured per node with that node alone kept
    # in float and with it alone quantised (TapResult.brute_force); empty for a diagnosis.
    brute_force_outputs: list[str] = field(default_factory=list)
    # Limits the brute force to these ONNX nodes (a sweep too long for every node); empty: every node.
    brute_force_nodes: list[str] = field(default_factory=list)
    # The brute force's second form (--with-producers): each node kept in float together with the nodes
    # producing its data inputs, so that the tensor entering it is float too (rknn-toolkit2 keeps the
    # tensor between two layers int8 unless both are float16); where the target supports it (RKNN).
    brute_force_with_producers: bool = False


@dataclass
class TapResult:
    """accuracy_taps' answer: per-node records (graph order), and what the path is."""

    records: list[dict]
    toolchain: str  # e.g. "esp-ppq 1.3.12"
    method: str  # one line: how it quantised and what accumulated/isolated mean there
    notes: list[str] = field(default_factory=list)
    # When TapRequest.brute_force_outputs was given and the target can: {"float_argmax", "every_argmax":
    # [int] per sample, "ops": per quantised node {"node", "op_type", "all_but", "alone": {output:
    # tap_numpy moments}, "all_but_argmax", "alone_argmax"}} (argmax of the first output); where the
    # target gives them, "*_values" beside each "*_argmax": one score per sample of the first output
    # (its highest value: a detector's best anchor), for an AUROC.
    brute_force: dict | None = None
    # How the toolchain rounds the tensor between two nodes of which one is int8 and the other is not,
    # which the referred step (edgedeploy.accuracy.referred) charges each node with. True: the tensor is
    # int8 whichever of the two is int8, an int8 reader quantising it where its writer is not (rknn-toolkit2's
    # exDataConvert layers, scripts/accuracy/probe_rknn_hybrid.py; TFLite's QUANTIZE before a lone int8
    # operator), so a node's quantisation includes its inputs' rounding. False: a tensor is rounded by its
    # writer's quantiser alone (esp-ppq: a reader after a float writer reads float), so a node is charged
    # with its output's rounding and not its inputs'.
    reader_rounds_input: bool = True
    # Whether a node the target's mixed-precision repair takes off int8 still reads int8 tensors: readers
    # round their inputs and the repair takes the node without the writers of its inputs (its RANKED_NODES
    # knob without input_producers). The referred figures, which charge a node with its inputs' rounding,
    # then measure what that repair leaves in place, and do not lead the ranking.
    repair_keeps_inputs_rounded: bool = False
