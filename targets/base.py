"""The target contract: what a vendor package provides, and what it gets from the core.

A target is one package (its `TARGET` object, rules, workers, pinned requirements) plus its
templates (a `templates/` folder in the package, or for the built-in ones templates/<id>; see
Target.templates_dir and render_template), registered through the `edgedeploy.targets` entry-point group exactly
as a third-party vendor package would register. The core (edgedeploy.pipeline) runs every
shared stage once — intake, audit, data, the ONNX Runtime reference, verification, the report,
the atomic artifact — and calls only the vendor-specific stages:

    build_request(ctx)                -> ConvertRequest  the conversion's worker request (the core stages
                                                         nothing else, runs it through the executor in the
                                                         toolchain's environment kind, pipeline/convert.py)
    read_result(ctx, WorkerResult)    -> ConvertResult   the compiled artifact + the toolchain's own verdict
    explain_failure(ctx, req, exc)    -> ToolchainFailed a failure with the fields the target knows better
    convert(ctx)                      -> ConvertResult   instead of the three above, for tools that are not a
                                                         Python worker (an external command, a device)
    simulate(ctx, converted, data)    -> SimulationResult  outputs of the compiled model on the host
                                                         (only with Capability.SIMULATE)
    codegen(ctx, converted)           -> dict            the generated project / runners (report section)
    runner_spec(artifact, manifest, device) -> RunnerSpec  what `measure` runs on a device (RUNNER)
    measure_serial(...)               -> dict            a board on a serial port (SERIAL)
    toolchain_verdicts(...)           -> [ToolchainVerdict] `audit --confirm` (VERDICT)
    bench_backends()                  -> [Backend]       what `bench` can time with this toolchain (BENCH)

Optional stages are declared in `capabilities`; the registry checks at load time that every
declared stage is implemented (and that nothing undeclared is), so the core never probes with
hasattr. Vendor options are a typed dataclass (`options_type`, fields made with `option()`),
each flag in the target's own namespace (`--<id>-...`), parsed and validated once by the core and
shown grouped per vendor in `build --help`.
Nothing in a target package imports a vendor SDK: vendor code runs only in workers, inside the
toolchain's own environment, through the executor (edgedeploy.toolchains.executor).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import importlib.resources
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from edgedeploy.errors import NotAvailableYet, OptionError
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.reproducible import Variation
from edgedeploy.toolchains import Toolchain

if TYPE_CHECKING:
    from edgedeploy.audit.rules import RuleSet
    from edgedeploy.datasets import Dataset
    from edgedeploy.devices.base import RunnerSpec
    from edgedeploy.errors import ToolchainFailed
    from edgedeploy.targets.stages import BuildContext, ConvertRequest, ConvertResult, SimulationResult, TapRequest, TapResult, WorkerResult


class Capability(str, enum.Enum):
    """Optional stages a target can have; convert and codegen are not optional."""

    AUDIT = "audit"  # rules: the audit predicts each node's placement (a rules module, or rule_set)
    SIMULATE = "simulate"  # a host simulator/interpreter: accuracy before/after at build time
    RUNNER = "runner"  # runner_spec: measured on a device over local/ssh
    SERIAL = "serial"  # measure_serial: firmware on a board over a serial port
    VERDICT = "verdict"  # toolchain_verdicts: the toolchain's own placement (audit --confirm)
    BENCH = "bench"  # bench_backends: ways `edgedeploy bench` can time a model with this toolchain
    HOST = "host"  # host_runner_spec: what of an artifact this machine can run (measure --device local), as host figures
    DIAGNOSE = "diagnose"  # accuracy_taps: the toolchain's quantised tensors per ONNX node (edgedeploy diagnose)


# The method each capability needs, for the registry's check.
CAPABILITY_METHODS = {
    Capability.AUDIT: "rule_set",
    Capability.SIMULATE: "simulate",
    Capability.RUNNER: "runner_spec",
    Capability.SERIAL: "measure_serial",
    Capability.VERDICT: "toolchain_verdicts",
    Capability.BENCH: "bench_backends",
    Capability.HOST: "host_runner_spec",
    Capability.DIAGNOSE: "accuracy_taps",
}


@dataclass(frozen=True)
class Chip:
    """One chip a target compiles for, as data.

    `id` is what users type after --target; `aliases` are other spellings accepted for it.
    `toolchain_version` is the toolchain release whose documents the rules were transcribed
    from.
    """

    id: str
    name: str
    accelerator: str
    cpu: str
    accelerator_clock_mhz: int | None
    cpu_clock_mhz: int
    memory: dict[str, int] = field(default_factory=dict, hash=False)
    precisions: tuple[str, ...] = ("int8",)
    toolchain_version: str = ""
    fallback_unit: str = "CPU"
    notes: str = ""
    aliases: tuple[str, ...] = ()


def chip_table(columns: str, *rows: tuple, **shared: Any) -> tuple[Chip, ...]:
    """A target's chips declared as a table: one row per chip, what the family shares said once.

    `columns` names the Chip fields each row gives, in order ("id name accelerator cpu ...");
    `shared` are the fields every chip of the table has. A row may end with a dict of fields that
    chip alone sets (its own precisions or memory, say), which win over `shared`. Declaring the
    chips as data keeps a target's family facts in one place, instead of a Chip(...) call (or a
    private helper) per target restating the same field list.
    """
    names = columns.split()
    chips = []
    for row in rows:
        # One value more than the columns: the row's own fields (a dict) close it.
        own = row[-1] if len(row) == len(names) + 1 and isinstance(row[-1], dict) else {}
        values = row[: len(names)]
        if len(row) != len(names) + (1 if own else 0):
            raise ValueError(f"chip_table: a row gives {len(row)} values for {len(names)} columns ({columns}): {row!r}")
        chips.append(Chip(**{**shared, **dict(zip(names, values)), **own}))
    return tuple(chips)


# -- vendor options --------------------------------------------------------------------------


def option(flag: str, help: str, default: Any = None, *, metavar: str | None = None, choices: tuple[str, ...] | None = None, type: Any = str, multiple: bool = False, is_flag: bool = False, minimum: float | None = None, maximum: float | None = None, deprecated: tuple[str, ...] = ()):
    """A field of a target's options dataclass, with what `build --help` shows for it.

    `flag` is the command-line spelling, in the target's own namespace: `--<target id>-...`
    (e.g. "--acme-turbo"; the registry refuses a target whose flags are not), so two vendors'
    options never clash. `type` is str, int or float; `choices` limits the values; `multiple`
    makes it repeatable (the field holds a tuple); `is_flag` makes it a switch (the field holds a
    bool); `minimum`/`maximum` bound numbers. `deprecated` are former spellings still accepted
    for one release: hidden from --help, and a warning names the new flag when one is used.
    """
    if multiple:
        default = tuple(default or ())
    if is_flag:
        default = bool(default)
    meta = {"flag": flag, "help": help, "metavar": metavar, "choices": choices, "type": type, "multiple": multiple, "is_flag": is_flag, "minimum": minimum, "maximum": maximum, "deprecated": tuple(deprecated)}
    return field(default=default, metadata={"edgedeploy_option": meta})


def node_names_option(flag: str, help: str, **kwargs: Any):
    """A target option that names ONNX nodes: repeated, or names separated by commas (read them with
    given_node_names, which checks them against the model)."""
    return option(flag, help, multiple=True, metavar="NAME,...", **kwargs)


def given_node_names(values, graph, flag: str) -> list[str]:
    """A node_names_option's values -> ONNX node display names, each once, in the order given.

    A value is split at commas unless it is itself a node's name (names may hold commas); a name
    the model does not have is an OptionError naming `flag`.
    """
    from edgedeploy.errors import OptionError
    from edgedeploy.model.stats import node_names

    known = set(node_names(graph))
    names = []
    for value in values or ():
        for name in [value] if value in known else [p.strip() for p in value.split(",") if p.strip()]:
            if name not in known:
                raise OptionError(f"{flag}: the model has no node named {name!r}.")
            names.append(name)
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class TargetOptions:
    """Base of every target's options dataclass; a target without options uses it as is.

    Subclasses declare fields with `option()` and may override `validate(chip)` to refuse
    combinations (one OptionError sentence); the core calls it once per chip before converting.
    """

    def validate(self, chip: Chip) -> None:
        """Refuse option values that cannot work on `chip` (OptionError)."""

    def to_dict(self) -> dict:
        return {f.name: (list(v) if isinstance(v, tuple) else v) for f in dataclasses.fields(self) for v in [getattr(self, f.name)]}

    def given(self) -> dict:
        """The options the user set (those that differ from their defaults)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def declared(cls) -> list[tuple[dataclasses.Field, dict]]:
        """(field, its option metadata) for every declared option, in declaration order."""
        return [(f, f.metadata["edgedeploy_option"]) for f in dataclasses.fields(cls) if "edgedeploy_option" in f.metadata]

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> "TargetOptions":
        """Build from {field name: value} (the CLI's parsed values), checking types and ranges."""
        kwargs = {}
        for f, meta in cls.declared():
            if f.name not in values or values[f.name] is None:
                continue
            value = values[f.name]
            if meta["multiple"]:
                value = tuple(value)
            elif meta["is_flag"]:
                value = bool(value)
            elif meta["type"] in (int, float):
                try:
                    value = meta["type"](value)
                except (TypeError, ValueError):
                    raise OptionError(f"{meta['flag']}: {value!r} is not a number.") from None
                if meta["minimum"] is not None and value < meta["minimum"] or meta["maximum"] is not None and value > meta["maximum"]:
                    raise OptionError(f"{meta['flag']}: {value} is outside {meta['minimum']}..{meta['maximum']}.")
            if meta["choices"] and not meta["multiple"] and not meta["is_flag"] and str(value) not in meta["choices"]:
                raise OptionError(f"{meta['flag']}: {value!r} is not one of {', '.join(meta['choices'])}.")
            kwargs[f.name] = value
        return cls(**kwargs)


# -- repair knobs (`build --recover`) ---------------------------------------------------------

# The cost classes of a repair, cheapest first: `build --recover` tries them in this order.
REPAIR_COSTS = ("calibration", "per-channel", "equalisation", "bias-correction", "mixed-precision")
# A knob's `values` placeholder: the core fills in the nodes the accuracy diagnosis ranks first
# (1, 2, 4, ... of them), each value a tuple of ONNX node names.
RANKED_NODES = "ranked-nodes"


@dataclass(frozen=True)
class RepairKnob:
    """One of the toolchain's own means of trading cost for accuracy, declared by a target
    (Target.repair_knobs) and tried by the core's `build --recover` in the order of REPAIR_COSTS.

    option       a field of the target's options dataclass the attempt sets
    values       the values to try, in order (RANKED_NODES: node lists from the diagnosis ranking)
    cost         one of REPAIR_COSTS
    what         what the knob does, in the toolchain's words (one line of the report)
    unavailable  when set, the knob is not tried and this sentence (the toolchain's reason) is reported
    max_nodes    for RANKED_NODES: the most nodes taken off int8
    producers    for RANKED_NODES: also take the layers that compute each ranked node's input, up to the
                 first with weights (a toolchain that quantises an activation's input at the layer before
                 gains nothing from the activation alone in a wider type)
    input_producers  for RANKED_NODES: also take the nodes writing each ranked node's data inputs (a
                 toolchain that keeps the tensor between two layers in int8 unless both are in the wider
                 type gains nothing from the reading layer alone)
    every_node   a whole-model wider type (TFLite's 16x8): an attempt that sets it counts every node of
                 the model as off int8
    """

    option: str
    values: tuple | str
    cost: str
    what: str
    unavailable: str = ""
    max_nodes: int = 8
    producers: bool = False
    input_producers: bool = False
    every_node: bool = False


# -- what the core hands a target, and what it gets back --------------------------------------


@dataclass(frozen=True)
class CalibrationNeed:
    """What a conversion needs of calibration data; the core checks it before the toolchain runs."""

    required: bool
    minimum_samples: int = 1
    why: str = ""


# BuildData, BuildContext, SimulationResult, ConvertRequest, WorkerResult, ConvertResult,
# TapRequest and TapResult: in edgedeploy.targets.stages, importable from here (__getattr__).


# -- the contract ----------------------------------------------------------------------------


class Target:
    """Base class of every target: class attributes describe it, methods are its stages.

    Subclasses must set id, vendor, name, chips, toolchain; implement convert and codegen; and
    implement exactly the optional stages their `capabilities` declare.
    """

    id: ClassVar[str]
    vendor: ClassVar[str]
    name: ClassVar[str]
    chips: ClassVar[tuple[Chip, ...]]
    toolchain: ClassVar[Toolchain]
    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    options_type: ClassVar[type[TargetOptions]] = TargetOptions
    # Where `edgedeploy targets` lists it (built-in targets first, in the order users expect).
    listing_order: ClassVar[int] = 100
    # At worst, how long preparing a board reached over a serial port takes before it measures
    # (building and flashing its firmware; Capability.SERIAL): a farm gives each of its
    # measurements this long on top of the session time-out.
    board_setup_worst_case_s: ClassVar[float] = 0.0
    # The ways it can put firmware on a serial board, besides "auto" and "none" (`measure --flash`).
    serial_flash_modes: ClassVar[tuple[str, ...]] = ()
    # What of its artifact differs from build to build beyond the core's own files (the build
    # log, the report's durations): its toolchain's logs and durations, and files the toolchain
    # writes with different bytes every time; the manifest declares them (edgedeploy.reproducible).
    variation: ClassVar[Variation] = Variation()
    # chip id -> the toolchain's own latency estimate a build reports for it (a build's
    # toolchain_verdict.estimates.estimated_inference_time_us), named as users know it: shown
    # beside edgedeploy's estimate (docs/estimate.md). Empty: the toolchain estimates no time.
    toolchain_latency_estimate: ClassVar[dict[str, str]] = {}

    # -- facts ------------------------------------------------------------------------------
    @property
    def package(self) -> str:
        """The target's package, e.g. `edgedeploy.targets.espdl` (its class is defined in the package's __init__)."""
        return type(self).__module__

    @property
    def package_dir(self) -> Path:
        module = importlib.import_module(self.package)
        return Path(module.__file__).parent  # type: ignore[arg-type]

    @property
    def templates_dir(self) -> Path:
        """This target's Jinja2 templates: a `templates/` folder in its own package (where a
        plug-in ships them), else edgedeploy's templates/<id> (the built-in targets' folder)."""
        own = self.package_dir / "templates"
        if own.is_dir():
            return own
        return Path(str(importlib.resources.files("edgedeploy.templates"))) / self.id

    def render_template(self, name: str, **values: Any) -> str:
        """Render one of the target's templates (templates_dir/name); a value the template names
        but is not given is an error, not an empty string."""
        import jinja2

        environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(self.templates_dir)), undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
        )
        return environment.get_template(name).render(**values)

    def chip(self, chip_id: str) -> Chip:
        for chip in self.chips:
            if chip.id == chip_id:
                return chip
        raise KeyError(chip_id)

    def module(self, name: str) -> ModuleType:
        """Import one of the target's own modules (rules, build, ...) on demand."""
        return importlib.import_module(f"{self.package}.{name}")

    def has(self, capability: Capability) -> bool:
        return capability in self.capabilities

    # -- the audit --------------------------------------------------------------------------
    def rule_set(self, chip_id: str, precision: str | None = None, options: TargetOptions | None = None, **variant) -> "RuleSet":
        """The audit's RuleSet for one chip in one precision (from the target's rules module).

        `options` are the target's own build options, for rule tables that vary with them (a
        TensorRT release, DLA or GPU, a TIDL release); `variant` names such a table directly
        (one entry of rule_set_variants()).
        """
        if not self.has(Capability.AUDIT):
            raise self.not_available("The audit (this target declares no rules)")
        arguments = {**self.rule_set_arguments(chip_id, precision, options), **variant}
        return self.module("rules").rule_set(chip_id, precision=precision, **arguments)

    def rule_set_arguments(self, chip_id: str, precision: str | None, options: TargetOptions | None) -> dict:
        """Keyword arguments of the rules module's rule_set beyond the chip and precision; none by default."""
        return {}

    def rule_set_variants(self, chip_id: str) -> list[dict]:
        """The other rule tables a chip has (for the supported-operators docs); none by default."""
        return []

    # -- data -------------------------------------------------------------------------------
    def calibration_need(self, chip: Chip, precision: str) -> CalibrationNeed:
        """What the conversion needs of calibration data; quantised precisions need some by default."""
        if precision in ("int8", "int16"):
            return CalibrationNeed(True, 1, f"{precision} quantisation is calibrated on real inputs")
        return CalibrationNeed(False)

    # -- the conversion (the core runs it: pipeline/convert.py) -----------------------------
    def build_request(self, ctx: BuildContext) -> ConvertRequest | None:
        """The worker request that converts ctx.model_path into ctx.workdir; None when convert(ctx) runs the tools."""
        return None

    def read_result(self, ctx: BuildContext, result: WorkerResult) -> ConvertResult:
        """What the worker's result means: the ConvertResult (with build_request)."""
        raise NotImplementedError

    def explain_failure(self, ctx: BuildContext, request: ConvertRequest, failure: "ToolchainFailed") -> "ToolchainFailed":
        """The toolchain's failure with the fields this target knows better filled in (failure.replace); as is by default."""
        return failure

    def convert(self, ctx: BuildContext) -> ConvertResult:
        """Convert with tools that are not a Python worker (an external command, a device); build_request returns None then."""
        raise NotImplementedError

    # -- the other stages -------------------------------------------------------------------

    def codegen(self, ctx: BuildContext, converted: ConvertResult) -> dict:
        """Generate the deployment project or runners into ctx.workdir; returns the report's codegen section."""
        raise NotImplementedError

    def simulate(self, ctx: BuildContext, converted: ConvertResult, evaluation: "Dataset") -> SimulationResult:
        """Outputs of the compiled model on the host for `evaluation` (Capability.SIMULATE)."""
        raise self.not_available("Host simulation")

    def runner_spec(self, artifact: Path, manifest: dict, device) -> RunnerSpec:
        """The runner `edgedeploy measure` runs on `device` for this artifact (Capability.RUNNER)."""
        raise self.not_available("`edgedeploy measure` over a runner")

    # Why nothing of this target's artifacts runs on this machine (`measure --device local`):
    # the sentence a user reads. A target with Capability.HOST runs what it can instead.
    host_unavailable: ClassVar[str] = "its artifacts run only on the chip"

    def host_runner_spec(self, artifact: Path, manifest: dict, settings, stage_dir: Path) -> RunnerSpec:
        """What of the artifact this machine can run, as a runner for the `local` device (Capability.HOST).

        The figures it gives are this host's, never the chip's: `measure` labels them so. The
        spec names the interpreter it needs (`python`, e.g. the toolchain environment's) and,
        as its `baseline`, the matching "before" on this host. `settings` are the session
        settings (measure.harness.SessionSettings); `stage_dir` a scratch folder.
        """
        raise self.not_available("A host run of the artifact")

    def measure_serial(self, artifact: Path, manifest: dict, device, **options) -> dict:
        """Run the artifact on a board reached over a serial port (Capability.SERIAL).

        Options (all optional): flash ("auto" | the target's own choices | "none"),
        firmware_build (a folder of binaries the user built), timeout_s (the whole console
        read), reset ("auto" | "rts" | "none"), echo (progress lines), console_echo (every
        console line, or None). Returns one board run as a dict: sessions (`edgedeploy.run/1`
        results), sessions_expected, scope, protocol, complete/partial/error, outputs_match,
        flashing. Raises an EdgedeployError only when nothing can be measured.
        """
        raise self.not_available("Measuring over a serial port")

    def toolchain_verdicts(self, model_paths: list[Path], chip_id: str, workdir: Path, log_path: Path, *, precision: str | None = None, inputs: Path | None = None, **options) -> list:
        """The real toolchain's own placement of each node, for each model (Capability.VERDICT).

        `precision` is the one audited (None: the chip's first); `inputs` an .npz of
        calibration inputs (None: the target's seeded random data). One worker process for all
        models, so the toolchain's start-up is paid once. Returns ToolchainVerdicts.
        """
        raise self.not_available("`audit --confirm`")

    def toolchain_verdict(self, model_path: Path, chip_id: str, workdir: Path, log_path: Path, *, precision: str | None = None, inputs: Path | None = None, **options):
        """toolchain_verdicts for one model."""
        return self.toolchain_verdicts([Path(model_path)], chip_id, workdir, log_path, precision=precision, inputs=inputs, **options)[0]

    def accuracy_taps(self, request: "TapRequest") -> "TapResult":
        """The toolchain's quantised simulation tapped per node of the user's model (Capability.DIAGNOSE).

        Requantises the artifact's model as its build did and returns one record per node in the
        format of edgedeploy.accuracy.diagnosis (node names mapped back to the ONNX model's), with
        the sums and statistics of edgedeploy.accuracy.tap_numpy; the core does the rest.
        """
        raise self.not_available("`edgedeploy diagnose`")

    def bench_backends(self) -> list:
        """Ways `edgedeploy bench` can time a model with this target's toolchain (Capability.BENCH)."""
        raise self.not_available("`edgedeploy bench`")

    # -- what the target adds to the shared report and gates ----------------------------------
    def report_sections(self, report: dict, artifact: Path) -> list:
        """What this target adds to `edgedeploy report` for one of its artifacts (`report` is its
        report.json, `artifact` its folder): a list of edgedeploy.report.sections.Section, data
        only (titled facts and tables with units and notes). The core checks them, writes them
        into the comparison JSON and renders them into text, Markdown and HTML; a target
        renders nothing itself. Nothing by default."""
        return []

    def gate_figures(self, report: dict) -> dict[str, tuple[float, str]]:
        """The figures of a fresh build (its report) that `--fail-on` gates read beyond the shared
        ones, as {gate key: (value, where in the report it comes from)}: "flash" (the model's bytes
        in flash, where the target places it there) and "ram" (the accelerator's working memory,
        where the toolchain estimates it). A gate whose figure the target does not give fails as
        unchecked, saying so. Nothing by default."""
        return {}

    def repair_knobs(self, chip: Chip, precision: str, options: TargetOptions) -> list[RepairKnob]:
        """What `build --recover` may change when a build misses its accuracy gates (RepairKnob),
        given the options the user built with; also the means the toolchain lacks, with
        `unavailable` saying why. Nothing by default: the build cannot be repaired."""
        return []

    def repair_costs(self, report: dict) -> dict:
        """What an attempt of `build --recover` costs on the chip beyond the core's figures (model
        size, nodes off int8), read from its report: e.g. the operators left on the CPU and the
        toolchain's own time estimate, each named for what it is. Nothing by default."""
        return {}

    def not_available(self, what: str) -> NotAvailableYet:
        return NotAvailableYet(f"{what} is not available for the {self.name} target.")


def contract_problems(target: Target) -> list[str]:
    """What is wrong with a target object against the contract (empty when it is sound).

    The registry runs this on every target it loads, built-in or third-party.
    """
    problems = []
    if not isinstance(target, Target):
        return [f"{target!r} is not an edgedeploy.targets.base.Target"]
    cls = type(target)
    for attr in ("id", "vendor", "name", "chips", "toolchain"):
        if not hasattr(cls, attr):
            problems.append(f"it sets no `{attr}`")
    if getattr(cls, "codegen") is getattr(Target, "codegen"):
        problems.append("it does not implement `codegen`")
    declares_request = getattr(cls, "build_request") is not getattr(Target, "build_request")
    if declares_request and getattr(cls, "read_result") is getattr(Target, "read_result"):
        problems.append("it implements `build_request` but not `read_result`")
    if not declares_request and getattr(cls, "convert") is getattr(Target, "convert"):
        problems.append("it implements neither `build_request` and `read_result` nor `convert`")
    for capability, method in CAPABILITY_METHODS.items():
        implemented = getattr(cls, method) is not getattr(Target, method)
        if capability is Capability.AUDIT and not implemented:
            # The default rule_set reads the package's rules module.
            implemented = _has_module(f"{target.package}.rules")
        declared = capability in cls.capabilities
        if declared and not implemented:
            problems.append(f"it declares `{capability.value}` but does not implement `{method}`")
        if implemented and not declared:
            problems.append(f"it implements `{method}` but does not declare `{capability.value}` in its capabilities")
    if not issubclass(cls.options_type, TargetOptions) or not dataclasses.is_dataclass(cls.options_type):
        problems.append("its options_type is not a TargetOptions dataclass")
    elif hasattr(cls, "id"):
        problems += _option_problems(cls.id, cls.options_type)
    return problems


def option_flags(options_type: type[TargetOptions]) -> list[str]:
    """Every command-line spelling of a target's options: the flags, then their deprecated aliases."""
    declared = options_type.declared()
    return [meta["flag"] for _, meta in declared] + [alias for _, meta in declared for alias in meta.get("deprecated", ())]


def _option_problems(target_id: str, options_type: type[TargetOptions]) -> list[str]:
    """Flags outside the target's namespace (`--<id>-...`), or spelled twice."""
    prefix = f"--{target_id}-"
    problems = [f"its option {meta['flag']} is not in its namespace: a target's flags begin with {prefix}" for _, meta in options_type.declared() if not meta["flag"].startswith(prefix)]
    flags = option_flags(options_type)
    problems += [f"its option {flag} is declared twice" for flag in sorted({f for f in flags if flags.count(f) > 1})]
    problems += [f"its deprecated alias {flag!r} is not a long option (--name)" for flag in flags if not flag.startswith("--")]
    return problems


def _has_module(name: str) -> bool:
    """Whether `name` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError) as exc:  # a parent that is a module, not a package
        reraise_if_interrupted(exc)
        return False


# Parts of the contract only builds use, imported on first use (PEP 562): every command imports
# this module, and importing the devices package and making the build stages' dataclasses cost
# the audit 5-6 ms.
_BUILD_STAGE_TYPES = ("BuildData", "BuildContext", "SimulationResult", "ConvertRequest", "WorkerResult", "ConvertResult", "TapRequest", "TapResult")


def __getattr__(name: str):
    if name == "RunnerSpec":  # what runner_spec returns
        from edgedeploy.devices.base import RunnerSpec

        return RunnerSpec
    if name in _BUILD_STAGE_TYPES:
        from edgedeploy.targets import stages

        return getattr(stages, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
