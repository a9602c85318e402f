"""The rule vocabulary: how a target's rule table is written.

A rule is a small function decorated with `@rule(...)`. Its docstring is the sentence a user
reads, with the rule's limits written as `{NAME}` placeholders filled from named constants
(the way Arm's Vela documents its constraints), so the same numbers drive the check and the
documentation. A rule looks at one node (`NodeView`) on one chip and returns None when the node
is fine, or one `Offence` (or several) carrying the measured value that broke the rule. Rules
never print and never return a bare bool.

Placement consequences, from best to worst:
  ACCELERATOR  runs on the accelerator
  FLOAT        kept in float inside a quantised graph (slower, still on the device's main path)
  FALLBACK     leaves the accelerator for the CPU (for Jetson DLA: for the GPU)
  UNSUPPORTED  no unit can run it: the build would fail
"""

from __future__ import annotations

import enum
import inspect
import math
import opcode
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper


class Placement(str, enum.Enum):
    ACCELERATOR = "accelerator"
    FLOAT = "float"
    FALLBACK = "fallback"
    UNSUPPORTED = "unsupported"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def on_accelerator(self) -> bool:
        return self is Placement.ACCELERATOR


_SEVERITY = {Placement.ACCELERATOR: 0, Placement.FLOAT: 1, Placement.FALLBACK: 2, Placement.UNSUPPORTED: 3}


def worst(placements: Iterable[Placement]) -> Placement:
    return max(placements, key=_SEVERITY.__getitem__, default=Placement.ACCELERATOR)


@dataclass(frozen=True)
class Offence:
    """What a rule found: the measured value that broke it, and optionally a short detail.

    `uncertain`: the rule cannot know from the model alone (a pass that depends on the
    toolchain's version, a shape that depends on the data); its placement is then the audit's
    best guess, shown as uncertain with the rule's sentence as the reason, and `--confirm`
    settles it where the toolchain is installed.
    """

    value: Any
    detail: str = ""
    uncertain: bool = False


def stored_all_zero(tensor: onnx.TensorProto) -> bool:
    """Whether a stored tensor holds only zeros, negative zeros included (an exporter that folds a
    BatchNorm whose scale is zero into a Conv writes -0.0 wherever a weight was negative, and
    toolchains fold such a product all the same). A byte other than 0x00 and 0x80 (a float's sign
    byte) in the first ones settles nearly every weight at once; False for external data."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        return False
    raw = tensor.raw_data
    if raw and raw[:64].strip(b"\0\x80"):
        return False
    v = tensor_values(tensor)
    return v.size > 0 and not np.any(v)


class computed_once:
    """functools.cached_property without its lock: the value is computed on first read and kept in
    the instance's __dict__, which later reads find first. Python 3.11's cached_property takes a
    lock on every first read, a fifth of the cost of the node and tensor views' properties
    that every chip's rules read (Python 3.12 dropped the lock for the same reason); the
    audit reads them from one thread."""

    def __init__(self, function: Callable):
        self.function = function
        self.__doc__ = function.__doc__
        self.name = function.__name__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value


# Element types whose stored bytes numpy reads as they are (on a little-endian machine).
_NATIVE_DTYPES = {
    onnx.TensorProto.FLOAT: np.dtype(np.float32),
    onnx.TensorProto.DOUBLE: np.dtype(np.float64),
    onnx.TensorProto.FLOAT16: np.dtype(np.float16),
    onnx.TensorProto.INT64: np.dtype(np.int64),
    onnx.TensorProto.INT32: np.dtype(np.int32),
    onnx.TensorProto.INT16: np.dtype(np.int16),
    onnx.TensorProto.INT8: np.dtype(np.int8),
    onnx.TensorProto.UINT8: np.dtype(np.uint8),
    onnx.TensorProto.BOOL: np.dtype(np.bool_),
}


def tensor_values(tensor: onnx.TensorProto) -> np.ndarray:
    """numpy_helper.to_array(tensor), the same array, taking the short way for the common case
    (values stored in raw_data, of a type numpy reads as stored, on a little-endian machine):
    to_array's checks cost 15 microseconds a tensor, and the audit reads a thousand small
    tensors (norm parameters, axes, shapes) of a 900-node model."""
    kind = _NATIVE_DTYPES.get(tensor.data_type)
    if kind is None or sys.byteorder != "little" or tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.HasField("segment") or not tensor.HasField("raw_data"):
        return numpy_helper.to_array(tensor)
    return np.frombuffer(tensor.raw_data, dtype=kind).reshape(tensor.dims)


# numpy's allclose(v, 0) at its default tolerance (atol 1e-8): TensorView.all_close_to_zero.
NEAR_ZERO = 1e-8
_FLOAT_BYTES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64}


def stored_all_close_to_zero(tensor: onnx.TensorProto) -> bool:
    """Whether a stored tensor's values all lie within NEAR_ZERO of zero; False for external data.
    Its first stored values settle nearly every weight at once (only float32 and float64 can
    hold a value so small that is not zero: float16's smallest is 6e-8)."""
    kind = _FLOAT_BYTES.get(tensor.data_type)
    if kind is None or tensor.data_location == onnx.TensorProto.EXTERNAL:
        return stored_all_zero(tensor)
    raw = tensor.raw_data
    if raw and np.any(np.abs(np.frombuffer(raw[:64], dtype=kind)) > NEAR_ZERO):
        return False
    v = tensor_values(tensor)
    return v.size > 0 and bool(np.all(np.abs(v) <= NEAR_ZERO))


@dataclass(frozen=True)
class TensorView:
    """One input or output of a node, as rules see it."""

    name: str
    shape: tuple | None  # ints for known dims, str/None for dynamic ones; None: rank unknown
    dtype: str | None  # numpy-style name: float32, int8, ...; None when unknown
    is_constant: bool
    _value: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Computable when the model is compiled: a constant, or the output of nodes that only read
    # such tensors (or the shape of a tensor whose shape is static). Simplifiers fold these.
    foldable: bool = False
    # The constant's TensorProto, converted to `value` only when a rule asks (most never do).
    _tensor: onnx.TensorProto | None = field(default=None, repr=False, compare=False)
    # True for the model's own outputs: toolchains treat the tensors at the model's boundary
    # apart (layout and type conversions for the caller).
    is_model_output: bool = False
    # True for the model's own inputs (not initializers): the other side of the boundary (Vela
    # refuses boolean model inputs and outputs; onnx2tf must read some inputs as constants).
    is_graph_input: bool = False
    # The operator type of the node that produces the tensor (None for model inputs and
    # constants): converters rewrite some pairs (x / Sqrt(v) becomes x * Rsqrt(v)).
    producer: str | None = None
    # The operator types of the nodes that read the tensor, in graph order (() : none reads it,
    # though it may still be a model output; None: not known). Some toolchain crashes depend on
    # what follows a node (a GRU whose sequence output nothing reads, a Conv -> Reshape -> Slice).
    consumers: tuple[str, ...] | None = None
    # Why the tensor's value is unknown to the audit though a toolchain may compute it when it
    # compiles the model: it follows from a shape the model leaves open (a dynamic dimension, a
    # data-dependent shape). None: known, or computed at run time whatever the shapes.
    shape_unknown: str | None = None
    # A large constant's TensorProto (weights): never converted to `value`, only scanned by all_zero.
    _stored: onnx.TensorProto | None = field(default=None, repr=False, compare=False)

    @property
    def value(self) -> np.ndarray | None:
        """The constant's value (initializers and Constant outputs), else None."""
        if self._value is None and self._tensor is not None:
            object.__setattr__(self, "_value", tensor_values(self._tensor))
        return self._value

    @property
    def stored_elsewhere(self) -> bool:
        """Whether the constant's values are external data (a skeleton leaves them out): reading
        `value` would load them."""
        tensor = self._tensor if self._tensor is not None else self._stored
        return tensor is not None and tensor.data_location == onnx.TensorProto.EXTERNAL

    @computed_once
    def all_zero(self) -> bool:
        """Whether the tensor is a constant holding only zeros (a layer a library initialises to
        zero): read from its stored bytes, whose first ones decide for nearly every weight; False
        when the values are not stored here (external data, a skeleton) or not known."""
        tensor = self._tensor if self._tensor is not None else self._stored
        if tensor is None:
            v = self._value
            return v is not None and v.size > 0 and not np.any(v)
        return stored_all_zero(tensor)

    @computed_once
    def all_close_to_zero(self) -> bool:
        """Whether the tensor is a constant whose values all lie within 1e-8 of zero (numpy's
        allclose(v, 0) at its default tolerance), zeros included: a converter that tests weights
        so folds a product by them as a product by zeros (a scale of 2**-27 that an integer-only
        model multiplies its integers by). Its first stored values decide for nearly every weight."""
        tensor = self._tensor if self._tensor is not None else self._stored
        if tensor is None:
            v = self._value
            return v is not None and v.size > 0 and bool(np.all(np.abs(v) <= NEAR_ZERO))
        return stored_all_close_to_zero(tensor)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    # Worked out once per tensor: every chip's rules ask again.
    @computed_once
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @computed_once
    def numel(self) -> int | None:
        if not self.is_static:
            return None
        return math.prod(self.shape)  # ints: exact, and 20 times quicker than np.prod on a short tuple

    @property
    def present(self) -> bool:
        """ONNX marks a skipped optional input with the empty name."""
        return self.name != ""


_UNDECODED = object()


@dataclass(frozen=True)
class NodeView:
    """One node with everything rules may depend on: opset, attributes, shapes, dtypes, constants."""

    name: str
    op_type: str
    domain: str
    index: int
    opset: int
    inputs: tuple[TensorView, ...]
    outputs: tuple[TensorView, ...]
    proto: onnx.NodeProto = field(repr=False, compare=False)
    ir_version: int = 0  # the model's ONNX IR version (0: not known)

    def attr(self, name: str, default: Any = None) -> Any:
        """An attribute's value (bytes decoded to str), or `default` when the node does not set it."""
        values = self._attributes
        if name not in values:
            return default
        value = values[name]
        if value is _UNDECODED:
            # Decoded once per node: every chip's rules ask for the same attributes.
            value = helper.get_attribute_value(self._attribute_protos[name])
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            elif isinstance(value, onnx.TensorProto):
                value = tensor_values(value)
            values[name] = value
        return list(value) if isinstance(value, list) else value

    def has_attr(self, name: str) -> bool:
        return name in self._attributes

    @computed_once
    def memo(self) -> dict:
        """What a target's helpers work out about this node once for all their rules and chips,
        keyed by the helper (a fused node of the lowering step is a new view with its own memo)."""
        return {}

    @computed_once
    def _attribute_protos(self) -> dict[str, onnx.AttributeProto]:
        return {a.name: a for a in self.proto.attribute}

    @computed_once
    def _attributes(self) -> dict[str, Any]:
        return dict.fromkeys(self._attribute_protos, _UNDECODED)

    def input(self, i: int) -> TensorView | None:
        """Input i, or None when absent (not given, or the empty name of a skipped optional input)."""
        if i < len(self.inputs) and self.inputs[i].present:
            return self.inputs[i]
        return None

    def output(self, i: int = 0) -> TensorView | None:
        return self.outputs[i] if i < len(self.outputs) else None


ChipId = str
RuleFunction = Callable[[NodeView, ChipId], "Offence | Iterable[Offence] | None"]


@dataclass(frozen=True)
class Rule:
    """A checked constraint on some operators, with the placement its violation causes."""

    name: str
    ops: frozenset[str]  # empty: applies to every operator
    placement: Placement
    constants: dict[str, Any]
    check: RuleFunction
    template: str
    # Checked when the toolchain reads the model, before it folds constants: it holds on a node
    # whose every input is known too (such a node is otherwise folded and never checked).
    before_folding: bool = False

    @computed_once
    def sentence(self) -> str:
        """The docstring with its constants filled in: what users read in reports and docs."""
        return format_sentence(self.template, self.constants)

    def applies_to(self, op_type: str) -> bool:
        return not self.ops or op_type in self.ops

    @computed_once
    def reads_chip(self) -> bool:
        """Whether the check reads its chip argument. One that does not gives the same offences on
        a node for every chip whose rule set holds it, so an audit of many chips evaluates it once
        per node (edgedeploy.audit.engine.ChipIndependent)."""
        return reads_argument(self.check, 1)

    def evaluate(self, node: NodeView, chip: ChipId) -> list[Offence]:
        found = self.check(node, chip)
        if found is None:
            return []
        if isinstance(found, Offence):
            return [found]
        offences = list(found)
        for o in offences:
            if not isinstance(o, Offence):
                raise TypeError(f"rule {self.name} returned {o!r}; rules return Offence objects or None")
        return offences


# Opcodes that read or write a function's local variable by index (LOAD_FAST, STORE_FAST,
# LOAD_FAST_CHECK, ...), and those that name two locals in one argument, 4 bits each (3.13's
# LOAD_FAST_LOAD_FAST and the like).
_LOCAL_OPCODES = frozenset(code for name, code in opcode.opmap.items() if "FAST" in name)
_LOCAL_PAIR_OPCODES = frozenset(code for name, code in opcode.opmap.items() if name.count("FAST") == 2)


def reads_argument(func: Callable, position: int) -> bool:
    """Whether `func`'s body uses its positional parameter `position`, read from its byte code.

    Conservative: anything but a plain Python function, a parameter an inner function or
    comprehension captures, or a body that calls locals()/vars()/eval counts as using it.
    (The byte code is searched directly: `dis` takes 0.1 ms a function, a scan instruction by
    instruction a tenth of it, bytes.find for each opcode that names a local less again.)
    """
    code = getattr(func, "__code__", None)
    if code is None or code.co_argcount <= position or code.co_flags & inspect.CO_VARARGS:
        return True
    if code.co_varnames[position] in code.co_cellvars or {"locals", "vars", "eval", "exec"} & set(code.co_names):
        return True
    raw = code.co_code
    if not _LOCAL_PAIR_OPCODES.isdisjoint(raw[0::2]):
        return _reads_local_slowly(raw, position)
    # Each instruction is two bytes, the opcode at an even offset: a local read or written is one
    # of these byte pairs there, unless an EXTENDED_ARG before it makes the argument larger.
    for op in _LOCAL_OPCODES:
        at = raw.find(bytes((op, position)))
        while at != -1:
            if at % 2 == 0 and (at == 0 or raw[at - 2] != opcode.EXTENDED_ARG):
                return True
            at = raw.find(bytes((op, position)), at + 1)
    return False


def _reads_local_slowly(raw: bytes, position: int) -> bool:
    """reads_argument's scan, instruction by instruction, for byte code with opcodes naming two locals."""
    extended = 0
    for k in range(0, len(raw), 2):
        op, arg = raw[k], raw[k + 1] | extended
        extended = arg << 8 if op == opcode.EXTENDED_ARG else 0
        if op in _LOCAL_PAIR_OPCODES:
            if arg >> 4 == position or arg & 15 == position:
                return True
        elif op in _LOCAL_OPCODES and arg == position:
            return True
    return False


def format_sentence(template: str, constants: dict[str, Any]) -> str:
    text = " ".join(template.split())
    try:
        return text.format(**{k: _show_constant(v) for k, v in constants.items()})
    except (KeyError, IndexError) as exc:
        raise ValueError(f"rule docstring names a constant that is not given: {exc}") from exc


def _show_constant(value: Any) -> str:
    if isinstance(value, (set, frozenset, tuple, list)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        return ", ".join(str(v) for v in items)
    return str(value)


def rule(*ops: str, placement: Placement = Placement.FALLBACK, before_folding: bool = False, **constants: Any) -> Callable[[RuleFunction], Rule]:
    """Declare a rule on `ops` (none: every op) whose violation puts the node at `placement`.

    The decorated function's docstring is the user-facing sentence; write limits as {NAME} and
    pass NAME=value here, so the check reads the same constant the sentence shows.
    `before_folding`: the toolchain checks it as it reads the model, before folding constants
    (Rule.before_folding).
    """

    def wrap(func: RuleFunction) -> Rule:
        r = Rule(
            name=func.__name__,
            ops=frozenset(ops),
            placement=placement,
            constants=dict(constants),
            check=func,
            template=sentence_template(func, "rule"),
            before_folding=before_folding,
        )
        return r

    return wrap


def sentence_template(func: Callable, kind: str) -> str:
    """The first paragraph of `func`'s docstring: the sentence users read, with {NAME} placeholders."""
    if not func.__doc__:
        raise ValueError(f"{kind} {func.__name__} has no docstring: the docstring is the sentence users read")
    return func.__doc__.strip().split("\n\n")[0]


@dataclass(frozen=True)
class OpSupport:
    """What the accelerator documents for one operator on one chip.

    `precisions`: the precisions the accelerator runs it in (e.g. ("int8", "int16") or
    ("float",) for ESP-DL's float-only ops). `note`: a limit worth showing that no rule checks.
    `missing_precision`: where the node goes when the requested precision is not among them:
    FALLBACK (the default: another unit runs it) or FLOAT (the accelerator still runs it, in a
    wider float type, as TensorRT's GPU does for a layer without an fp16/int8 kernel), or
    UNSUPPORTED (nothing runs it in that precision: ESP-DL's Resize has no int16 kernel).
    """

    precisions: tuple[str, ...] = ("int8",)
    note: str = ""
    missing_precision: "Placement" = Placement.FALLBACK


@dataclass
class RuleSet:
    """Everything the audit needs to place the nodes of a model on one chip.

    - `accelerator_ops`: operators the accelerator runs (before limits).
    - `fallback_ops`: operators the fallback unit (CPU, or GPU for DLA) can run. None means any
      ONNX operator the runtime knows falls back; otherwise an op in neither set is UNSUPPORTED.
    - `float_only_ops`: operators the toolchain keeps in float inside a quantised graph.
    - `rules`: the limits, checked on every node they apply to, in the order they were declared
      (from the target's RuleRegistry, edgedeploy.audit.registry).
    - `source`: the vendor documents (and their versions) the table was transcribed from.
    """

    target: str
    chip: str
    toolchain_version: str
    source: str
    accelerator_ops: dict[str, OpSupport]
    rules: list[Rule]
    fallback_ops: frozenset[str] | None = None
    float_only_ops: frozenset[str] = frozenset()
    fallback_unit: str = "CPU"
    # Opsets the toolchain's ONNX importer accepts; outside it the whole model is UNSUPPORTED.
    min_opset: int = 1
    max_opset: int = 99
    # Newest ONNX IR version the toolchain's onnx package loads; None: no limit known.
    max_ir_version: int | None = None
    # The toolchain folds constant subgraphs (onnxsim and the like): a node computable at compile
    # time runs nowhere, so it is placed on the accelerator, whatever its operator.
    folds_constants: bool = False
    # The spellings of a Constant node's value the toolchain's importer cannot read (value_ints,
    # value_float, ...: it reads only a `value` tensor): such a Constant stops the build, folded
    # or not.
    constant_spellings_refused: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)
    # The toolchain's own graph passes, in the order it applies them: the lowering step that runs
    # before the rules (edgedeploy.audit.lowering). From the target's registry, like `rules`.
    passes: list = field(default_factory=list)
    # Which unit runs a node of each placement, and in which precision, in this chip's words:
    # "float" is the NPU in float16 on RKNN but the CPU in float32 on the i.MX 93, so every
    # placement is shown with its unit and precision (None: the precision audited). Defaults:
    # the accelerator in the audited precision, the fallback unit in float32.
    units: dict = field(default_factory=dict)

    def unit_of(self, placement: "Placement", precision: str | None) -> tuple[str | None, str | None]:
        """(unit, precision) that runs a node placed so; (None, None) for UNSUPPORTED."""
        if placement is Placement.UNSUPPORTED:
            return None, None
        defaults = {
            Placement.ACCELERATOR: ("accelerator", None),
            Placement.FLOAT: ("accelerator", "float32"),
            Placement.FALLBACK: (self.fallback_unit, "float32"),
        }
        unit, unit_precision = self.units.get(placement, defaults[placement])
        return unit, unit_precision or precision
