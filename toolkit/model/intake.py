"""Model intake: open an ONNX file safely, check it, pin its dynamic dimensions, infer shapes, hash.

Every later stage (inspect, audit, build, bench) starts from a `LoadedModel` made here, so the
checks in this module are the single gate that bad or hostile input has to pass. The order
matters: nothing outside the model's own folder is opened, and nothing large is allocated,
before the structure has been validated.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from edgedeploy import readahead
from edgedeploy.errors import EdgedeployWarning, ModelError, OptionError
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.model.shapes import InputShapes, dynamic_axes, pin_input_shapes

# Protobuf cannot serialise a message over 2 GiB, so a larger .onnx file is not a model file.
MAX_MODEL_FILE_BYTES = 2**31
# No dimension of an edge model needs more than a signed 32-bit index; larger ones are corrupt or hostile.
MAX_DIM = 2**31 - 1
# 2**32 elements is 16 GiB of float32: far beyond any device this tool targets.
MAX_TENSOR_ELEMENTS = 2**32
# A model with its external data must fit one protobuf message (2 GiB): ONNX's checker, shape
# inference and ONNX Runtime all serialise it whole, and every toolchain reads it that way.
MAX_MODEL_TOTAL_BYTES = 2**31 - 1
# Operator domains that ONNX Runtime (our reference) can execute.
KNOWN_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft"}
MICROSOFT_DOMAIN = "com.microsoft"
# Messages quoted from ONNX's checker and shape inference are cut to this many characters.
QUOTE_MAX_CHARS = 300


@dataclass
class LoadedModel:
    """A checked ONNX model with shapes inferred, plus where it came from.

    `proto` has its external data loaded, the user's `--input-shape` pins applied and shape
    inference run, so `shape(name)` answers for every tensor ONNX can infer.
    """

    path: Path
    proto: onnx.ModelProto
    sha256: str
    size_bytes: int
    pinned: dict[str, tuple[int, ...]] = field(default_factory=dict)
    auto_pinned: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """A file-system-safe short name for the model (its file stem)."""
        return self.path.stem

    @property
    def graph(self) -> onnx.GraphProto:
        return self.proto.graph

    @property
    def opset(self) -> int:
        """The opset version of the default ONNX domain."""
        for imp in self.proto.opset_import:
            if imp.domain in ("", "ai.onnx"):
                return imp.version
        return 0

    @property
    def initializer_names(self) -> set[str]:
        return {t.name for t in self.graph.initializer}

    def graph_inputs(self) -> list[onnx.ValueInfoProto]:
        """The real inputs: graph inputs that are not also initializers (old IR versions list both)."""
        inits = self.initializer_names
        return [vi for vi in self.graph.input if vi.name not in inits]

    def graph_outputs(self) -> list[onnx.ValueInfoProto]:
        return list(self.graph.output)

    def value_infos(self) -> dict[str, onnx.ValueInfoProto]:
        """Every tensor's ValueInfo that the model (after shape inference) declares."""
        infos: dict[str, onnx.ValueInfoProto] = {}
        for vi in list(self.graph.value_info) + list(self.graph.input) + list(self.graph.output):
            infos[vi.name] = vi
        return infos

    def shape(self, name: str) -> tuple[int | str | None, ...] | None:
        """The shape of a tensor: ints for known dims, the symbol (str) or None for unknown ones.

        None means the rank itself is unknown.
        """
        from edgedeploy.model.shapes import shape_of

        return shape_of(self, name)


def load_model(
    path: str | os.PathLike,
    input_shapes: InputShapes | None = None,
    require_static: bool = False,
    second_process: bool = False,
) -> LoadedModel:
    """Load, validate, pin and shape-infer an ONNX model; raise ModelError with one sentence.

    With `require_static`, a dynamic leading (batch) dimension the user did not pin is pinned to
    1 (recorded in `auto_pinned`), and any other dynamic dimension is an error naming the
    option that fixes it.
    `second_process`: ONNX's checker may run in a forked copy of this process (edgedeploy.forked,
    where available) instead of a thread; for the program itself, not a long-lived caller.
    """
    path = Path(path)
    data = _read_model_bytes(path)
    # ONNX's checker parses a serialised model: the bytes just read are that model, unless it has
    # external data (then the checker is given the model with that data loaded, below). It runs
    # beside the parse and the checks up to its turn; its verdict is taken in its old place, so the
    # errors a model gets, and their order, are the same. In a thread, it holds the GIL for about
    # half of its work (it parses the bytes into its own copy: 0.04 of 0.07 s on a 33 MB model,
    # and 10,000 page faults); in a second process none of that is on this one's path. Every
    # thread and process here is waited for, so none outlives this call.
    if second_process and _forked_available():
        checking = _InChild(_checker_verdict, path, data)
    else:
        checking = _InThread(_run_checker, path, data, name="edgedeploy-onnx-checker")
    hashing = None
    try:
        proto = _parse(path, data)
        outside = _tensors_stored_outside(proto)
        if outside:
            checking.wait()
            checking = None  # its verdict on the model without its external data is not the one wanted
        _check_strings(path, proto)
        _check_structure(path, proto)
        external_files = _check_external_data(path, outside)
        _check_total_size(path, data, outside)
        # The hash is computed on the other core while the checks below run (hashlib releases the GIL).
        hashing = _InThread(_content_hash, data, external_files, name="edgedeploy-model-hash")
        if external_files:
            try:
                external_data_helper.load_external_data_for_model(proto, str(path.parent))
            except Exception as exc:  # noqa: BLE001 - onnx raises several types here
                reraise_if_interrupted(exc)
                raise ModelError(f"{path.name}: its external data could not be read ({exc}).") from exc
        if checking is None:
            _run_checker(path, proto)
        else:
            checking.result()
        _unknown_for_minus_one(proto)
        _check_dims(path, proto)

        pinned: dict[str, tuple[int, ...]] = {}
        auto_pinned: dict[str, tuple[int, ...]] = {}
        if input_shapes:
            pinned = pin_input_shapes(proto, input_shapes)
        if require_static:
            auto_pinned = _pin_remaining_batch_dims(path, proto)
        if pinned or auto_pinned:
            _check_dims(path, proto)  # the pinned dimensions are new
        proto = _infer_shapes(path, proto, consume=True)
        _check_consistency(path, proto)
    finally:
        for thread in (checking, hashing):
            if thread is not None:
                thread.wait()
    try:
        sha256 = hashing.result()
    except OSError as exc:
        raise ModelError(f"The model's external data could not be read to hash it: {exc}.") from exc
    return LoadedModel(
        path=path.resolve(),
        proto=proto,
        sha256=sha256,
        size_bytes=len(data) + sum(f.stat().st_size for f in external_files),
        pinned=pinned,
        auto_pinned=auto_pinned,
    )


def from_proto(proto: onnx.ModelProto, path: Path, sha256: str | None = None) -> LoadedModel:
    """A LoadedModel for a model built in memory (a rewrite's result): checked and shape-inferred.

    `path` names where it will be written (for messages and its name); `sha256` defaults to the
    hash of its serialisation.
    """
    data = proto.SerializeToString()
    _check_strings(path, proto)
    _check_structure(path, proto)
    _run_checker(path, data)
    _check_dims(path, proto)
    inferred = _infer_shapes(path, proto)
    _check_consistency(path, inferred)
    return LoadedModel(
        path=Path(path),
        proto=inferred,
        sha256=sha256 or hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
    )


def with_batch_pinned(model: LoadedModel) -> LoadedModel | None:
    """A copy with dynamic leading (batch) dimensions pinned to 1, for figures that need static shapes.

    None when other dimensions are dynamic too (the user has to pin those) or nothing is dynamic.
    """
    inits = model.initializer_names
    if not any(dynamic_axes(vi) for vi in model.graph.input if vi.name not in inits):
        return None  # nothing dynamic: no copy of the model (weights included) is made
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)
    try:
        auto = _pin_remaining_batch_dims(model.path, proto)
    except ModelError:
        return None
    if not auto:
        return None
    proto = _infer_shapes(model.path, proto, consume=True)
    return LoadedModel(model.path, proto, model.sha256, model.size_bytes, dict(model.pinned), auto)


def _read_model_bytes(path: Path) -> bytes:
    try:
        if not path.exists():
            raise ModelError(f"Model file not found: {path}.")
        if not path.is_file():
            raise ModelError(f"{path} is not a file; give the path of an .onnx model file.")
        stat = path.stat()
        size = stat.st_size
        if size == 0:
            raise ModelError(f"{path.name} is empty (0 bytes); it is not an ONNX model.")
        if size >= MAX_MODEL_FILE_BYTES:
            raise ModelError(f"{path.name} is {size} bytes, over protobuf's 2 GiB limit; it is not a valid ONNX model file.")
        # The bytes a command read ahead while it imported ONNX (edgedeploy.readahead), if they are this file's.
        ahead = readahead.take(path, stat)
        return ahead if ahead is not None else path.read_bytes()
    except OSError as exc:  # a name too long, a permission, an I/O error: the file cannot be read
        raise ModelError(f"The model {path} cannot be read: {exc.strerror or exc}.") from exc


def _parse(path: Path, data: bytes) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelError(
            f"{path.name} is not a valid ONNX model: the file could not be parsed (truncated, or another format)."
        ) from exc
    # Random bytes sometimes parse as a protobuf message; a real model always has these fields.
    if proto.ir_version <= 0 or not proto.HasField("graph") or not proto.opset_import:
        raise ModelError(
            f"{path.name} is not a valid ONNX model: it has no IR version, graph or opset (truncated, or another format)."
        )
    return proto


def iter_graphs(graph: onnx.GraphProto):
    """The graph and every subgraph (If/Loop/Scan bodies), depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from iter_graphs(sub)


def _check_structure(path: Path, proto: onnx.ModelProto) -> None:
    if len(proto.graph.node) == 0:
        raise ModelError(f"{path.name}: the model's graph is empty (it has no nodes).")
    if not proto.graph.output:
        raise ModelError(f"{path.name}: the model's graph declares no outputs.")
    newest = onnx.defs.onnx_opset_version()
    # An opset import of an unknown domain is refused only where a node uses it (below): exporters
    # declare domains they never use (paddle2onnx writes ('Paddle', 1) into every file it makes).
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx") and not 1 <= imp.version <= newest:
            raise ModelError(
                f"{path.name} declares opset {imp.version} of ai.onnx, but opsets run from 1 to {newest} "
                f"(the newest the installed onnx {onnx.__version__} knows); re-export it with a released opset."
            )
    _check_element_types(path, proto)
    microsoft_ops: dict[str, str] = {}
    for graph in iter_graphs(proto.graph):
        for index, node in enumerate(graph.node):
            if node.domain not in KNOWN_DOMAINS:
                raise ModelError(
                    f"{path.name}: node '{node.name or node.op_type}' uses operator domain '{node.domain}', "
                    f"which edgedeploy does not know (known: ai.onnx, ai.onnx.ml, com.microsoft); custom operators cannot be deployed."
                )
            if node.domain == MICROSOFT_DOMAIN:
                microsoft_ops.setdefault(node.op_type, node.name or f"{node.op_type}_{index}")
    if microsoft_ops:
        _check_microsoft_ops(path, microsoft_ops)


def _check_element_types(path: Path, proto: onnx.ModelProto) -> None:
    """Every declared tensor type must be one ONNX defines (its checker lets any number through)."""
    valid = set(onnx.TensorProto.DataType.values())
    for graph in iter_graphs(proto.graph):
        for kind, infos in (("input", graph.input), ("output", graph.output), ("value_info", graph.value_info)):
            for vi in infos:
                if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type not in valid:
                    raise ModelError(f"{path.name}: {kind} '{vi.name}' declares element type {vi.type.tensor_type.elem_type}, which ONNX does not define.")
        for tensor in graph.initializer:
            if tensor.data_type not in valid or tensor.data_type == onnx.TensorProto.UNDEFINED:
                raise ModelError(f"{path.name}: initializer '{tensor.name}' has element type {tensor.data_type}, which ONNX does not define.")


def _check_microsoft_ops(path: Path, ops: dict[str, str]) -> None:
    """com.microsoft operators are ONNX Runtime's own: refuse those it does not know, warn about the rest.

    ONNX's checker does not know this domain, so without this a misspelt or invented operator
    would pass intake and only fail at the reference run. The known ones are legitimate (ONNX
    Runtime's optimiser writes them) but no edge toolchain converts them: the user hears so here.
    """
    from onnxruntime.capi import _pybind_state

    known = {schema.name for schema in _pybind_state.get_all_operator_schema() if schema.domain == MICROSOFT_DOMAIN}
    unknown = sorted(op for op in ops if op not in known)
    if unknown:
        raise ModelError(
            f"{path.name}: node '{ops[unknown[0]]}' uses com.microsoft operator '{unknown[0]}', which ONNX Runtime "
            f"does not know either; it cannot be run or deployed."
        )
    warnings.warn(
        EdgedeployWarning(
            f"{path.name} uses ONNX Runtime's own com.microsoft operators ({', '.join(sorted(ops))}): the reference "
            f"runs them, but no edge toolchain converts them, so expect them unsupported on every chip."
        ),
        stacklevel=2,
    )


def _check_strings(path: Path, proto: onnx.ModelProto) -> None:
    """Every string field must be UTF-8 text; refuse the model naming the node (or part) that holds one that is not.

    protobuf hands a proto2 `string` field that is not valid UTF-8 back as bytes; everything
    after intake (reports, JSON, generated code, ONNX's own checker) expects text, so this is
    checked once, here, for the whole message tree.
    """
    found = _first_non_utf8(proto, {})
    if found is not None:
        chain, field_name, value = found
        where = "the model"
        for part, index, item in chain:
            where = _describe_part(part, index, item, where)
        raise ModelError(
            f"{path.name}: the {field_name} of {where} is not valid UTF-8 text ({value!r}); "
            f"re-export the model with UTF-8 names."
        )


def _first_non_utf8(message, kinds: dict):
    """(the messages down to it, field, raw bytes) of the first string field below `message` that is not text, or None.

    Only the string and message fields that are set are visited, in field-number order (an unset
    string reads as '', which is text). Bytes fields (weights) are never read, so no tensor data
    is copied (ListFields would copy every tensor's raw_data: 33 MB on a 33 MB model).
    `kinds` caches, per message type, its string and message fields: (name, kind, repeated).
    """
    fields = kinds.get(message.DESCRIPTOR)
    if fields is None:
        fields = kinds[message.DESCRIPTOR] = _text_and_message_fields(message.DESCRIPTOR)
    for name, what, repeated in fields:
        if repeated:
            items = getattr(message, name)
            if not items:
                continue
        elif message.HasField(name):
            items = (getattr(message, name),)
        else:
            continue
        if what == "string":
            for item in items:
                if not isinstance(item, str):
                    return [], name.replace("_", " "), bytes(item)[:60]
        else:
            for index, item in enumerate(items):
                found = _first_non_utf8(item, kinds)
                if found is not None:
                    found[0].insert(0, (name, index, item))
                    return found
    return None


def _text_and_message_fields(descriptor) -> list[tuple[str, str, bool]]:
    """(name, "string" or "message", repeated) of a message type's fields of those kinds, by field number."""
    found = []
    for field in sorted(descriptor.fields, key=lambda f: f.number):
        what = _FIELD_KINDS.get(field.type)
        if what is not None:
            found.append((field.name, what, _is_repeated(field)))
    return found


_FIELD_KINDS = {FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_MESSAGE: "message"}


def _is_repeated(descriptor) -> bool:
    # protobuf 6 added `is_repeated`; protobuf 7 dropped `label`.
    if hasattr(descriptor, "is_repeated"):
        return bool(descriptor.is_repeated)
    return descriptor.label == FieldDescriptor.LABEL_REPEATED


def _describe_part(field_name: str, index: int, item, parent: str) -> str:
    """How a message is named in an error: nodes by index, op type and (printable) name."""
    if field_name == "node":
        name = item.name if isinstance(item.name, str) else None
        op = item.op_type if isinstance(item.op_type, str) else "?"
        return f"node {index} ({op}{f' {name!r}' if name else ''})" + ("" if parent in ("the model", "the graph") else f" in {parent}")
    if field_name == "graph":
        return "the graph"
    if field_name in ("initializer", "input", "output", "value_info", "sparse_initializer"):
        return f"{field_name.replace('_', ' ')} {index} of {parent}"
    if field_name == "attribute":
        return f"attribute {index} of {parent}"
    if field_name == "metadata_props":
        return f"metadata entry {index} of {parent}"
    if field_name in ("g", "graphs"):
        return f"a subgraph of {parent}"
    return parent


def _check_total_size(path: Path, data: bytes, outside: list[onnx.TensorProto]) -> None:
    """Refuse a model that, with its external data (the tensors `outside`), is over protobuf's 2 GiB before any of it is loaded."""
    folder = path.parent.resolve()
    total = len(data)
    for tensor in outside:
        # _check_external_data has validated these fields and the file already.
        info = {e.key: e.value for e in tensor.external_data}
        offset = int(info.get("offset") or 0)
        total += int(info["length"]) if info.get("length") else (folder / info["location"]).stat().st_size - offset
    if total > MAX_MODEL_TOTAL_BYTES:
        raise ModelError(
            f"{path.name} with its external data is {total} bytes, over the 2 GiB that ONNX, ONNX Runtime and the "
            f"edge toolchains handle as one model; split or compress it before deploying."
        )


def _external_tensors(proto: onnx.ModelProto):
    for graph in iter_graphs(proto.graph):
        for tensor in graph.initializer:
            yield tensor
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t
                elif attr.type == onnx.AttributeProto.TENSORS:
                    yield from attr.tensors


def _check_external_data(path: Path, outside: list[onnx.TensorProto]) -> list[Path]:
    """Validate every external-data reference before anything is opened.

    Only regular files inside the model's own folder may be read: absolute locations, `..`
    components, and links that resolve outside the folder are refused.
    """
    folder = path.parent.resolve()
    files: dict[Path, None] = {}
    for tensor in outside:
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        where = f"{path.name}: tensor '{tensor.name}'"
        if not location:
            raise ModelError(f"{where} is stored externally but names no file.")
        if "\x00" in location:
            raise ModelError(f"{where} names an external-data file with a NUL byte in it; refusing to open it.")
        if os.path.isabs(location) or location.startswith(("/", "\\")) or (len(location) > 1 and location[1] == ":"):
            raise ModelError(f"{where} points to an absolute path ({location}); external data must lie in the model's folder.")
        parts = Path(location.replace("\\", "/")).parts
        if ".." in parts:
            raise ModelError(f"{where} points outside the model's folder ({location}); refusing to open it.")
        candidate = folder / location
        resolved = candidate.resolve()
        if folder != resolved and folder not in resolved.parents:
            raise ModelError(f"{where} points through a link outside the model's folder ({location}); refusing to open it.")
        if not resolved.is_file():
            raise ModelError(f"{where} needs external-data file '{location}', which is missing next to the model.")
        size = resolved.stat().st_size
        try:
            offset = int(info.get("offset", "0") or 0)
            length = int(info["length"]) if info.get("length") else size - offset
        except ValueError as exc:
            raise ModelError(f"{where} has a malformed external-data offset or length.") from exc
        if offset < 0 or length < 0 or offset + length > size:
            raise ModelError(
                f"{where} reads bytes {offset}..{offset + length} of '{location}', which has only {size} bytes (truncated?)."
            )
        files[resolved] = None
    return list(files)


def _content_hash(data: bytes, external_files: list[Path]) -> str:
    """sha256 of the model file's bytes, then of each external-data file in path order.

    The same bytes give the same hash on every machine, so the hash identifies the model in
    manifests, reports and caches.
    """
    digest = hashlib.sha256(data)
    for f in sorted(external_files):
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


class _InThread:
    """`function(*args)` run in a thread; `result()` waits for it and returns its value or raises its exception."""

    def __init__(self, function, *args, name: str):
        self._value = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(function, args), name=name, daemon=True)
        self._thread.start()

    def _run(self, function, args) -> None:
        try:
            self._value = function(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value


class _InChild:
    """`function(*args)` (which returns None or a ModelError's message) run in a forked child, with
    _InThread's interface: `result()` raises the ModelError, or runs the function here if the child
    failed (so a crash or an error is the same as without the child)."""

    def __init__(self, function, *args):
        from edgedeploy.forked import ForkedCall

        self._function, self._args = function, args
        self._child = ForkedCall(lambda: (function(*args),))

    def wait(self) -> None:
        self._child.close()

    def result(self):
        found = self._child.result()
        message = found[0] if found is not None else self._function(*self._args)
        if message is not None:
            raise ModelError(message)


def _forked_available() -> bool:
    from edgedeploy import forked

    return forked.available()


def _checker_verdict(path: Path, model: onnx.ModelProto | bytes) -> str | None:
    """_run_checker's error message, or None when the model passes."""
    try:
        _run_checker(path, model)
    except ModelError as exc:
        return str(exc)
    return None


def _tensors_stored_outside(proto: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The tensors of every graph whose data is in external files: found in one walk through every
    graph's initializers and tensor attributes (3 ms on a 900-node model) for the three steps of
    load_model that ask."""
    return [t for t in _external_tensors(proto) if t.data_location == onnx.TensorProto.EXTERNAL]


def quoted(exc: BaseException) -> str:
    """An exception's message as the end of one sentence: one line, at most QUOTE_MAX_CHARS, a full stop."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > QUOTE_MAX_CHARS:
        text = text[: QUOTE_MAX_CHARS - 3].rstrip() + "..."
    text = text.rstrip(" :;,")
    return text if text.endswith(".") else text + "."


def _run_checker(path: Path, model: onnx.ModelProto | bytes) -> None:
    """ONNX's checker on the model, or on its serialisation when the caller has it (saves serialising it again)."""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise ModelError(f"{path.name} fails ONNX's model checker: {quoted(exc)}") from exc


def _unknown_for_minus_one(proto: onnx.ModelProto) -> None:
    """Read a dimension of -1 on a graph input or output as unknown, as exporters mean it.

    ONNX asks for a symbol or nothing where a size is not fixed, but paddle2onnx and older
    exporters write -1 (PaddleOCR's text-direction classifier in rapidocr-onnxruntime has
    [-1, 3, ?, ?]); ONNX Runtime and the toolchains run such models, so it becomes a dynamic
    dimension here, which the batch pin or `--input-shape` then fixes. Other negatives stay absurd.
    """
    for vi in [*proto.graph.input, *proto.graph.output]:
        if vi.type.HasField("tensor_type"):
            for d in vi.type.tensor_type.shape.dim:
                if d.HasField("dim_value") and d.dim_value == -1:
                    d.Clear()


def _check_dims(path: Path, proto: onnx.ModelProto) -> None:
    """Refuse absurd dimensions on inputs and initializers before anything is allocated."""
    for vi in proto.graph.input:
        dims = vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else []
        total = 1
        for axis, d in enumerate(dims):
            if d.HasField("dim_value"):
                if d.dim_value < 0 or d.dim_value > MAX_DIM:
                    raise ModelError(
                        f"{path.name}: input '{vi.name}' has an absurd dimension {d.dim_value} at axis {axis}."
                    )
                total *= max(d.dim_value, 1)
        if total > MAX_TENSOR_ELEMENTS:
            raise ModelError(
                f"{path.name}: input '{vi.name}' would hold {total} elements, more than the {MAX_TENSOR_ELEMENTS} any edge device can."
            )
    for tensor in proto.graph.initializer:
        total = 1
        for d in tensor.dims:
            if d < 0 or d > MAX_DIM:
                raise ModelError(f"{path.name}: initializer '{tensor.name}' has an absurd dimension {d}.")
            total *= d
        if total > MAX_TENSOR_ELEMENTS:
            raise ModelError(f"{path.name}: initializer '{tensor.name}' claims {total} elements; the file is corrupt.")


def _pin_remaining_batch_dims(path: Path, proto: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Pin a dynamic leading dimension to 1; any other dynamic dimension must be pinned by the user."""
    auto: dict[str, tuple[int, ...]] = {}
    inits = {t.name for t in proto.graph.initializer}
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        axes = dynamic_axes(vi)
        if not axes:
            continue
        dims = vi.type.tensor_type.shape.dim
        if axes != [0]:
            other = [a for a in axes if a != 0]
            raise ModelError(
                f"{path.name}: input '{vi.name}' has dynamic dimension(s) at axis {', '.join(map(str, other))}; "
                f"pin them with --input-shape {vi.name}=" + "x".join(
                    str(d.dim_value) if d.HasField("dim_value") else "N" for d in dims
                ) + " (N: the size you deploy with)."
            )
        dims[0].Clear()
        dims[0].dim_value = 1
        auto[vi.name] = tuple(d.dim_value for d in dims)
    return auto


# ONNX's C++ inference reports a model it cannot read as ValueError, a bad one as InferenceError.
INFERENCE_ERRORS = (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError)
# Initializers with more elements than this reach shape inference as stubs (name, element type,
# dims) instead of copies of their values: shape functions read the values of shape, axes, pads
# or scales inputs, a handful of elements, never of weights this large.
SHAPE_INFERENCE_STUB_MIN_ELEMENTS = 4096
STUB_LOCATION = "(values left out of the copy given to shape inference)"


def _infer_shapes(path: Path, proto: onnx.ModelProto, consume: bool = False) -> onnx.ModelProto:
    """ONNX's strict shape inference (types checked, data propagated) of `proto`: the inferred model.

    `consume`: the caller owns `proto` and drops it, so the result may be built in it (its weights
    are then never copied); otherwise `proto` is left as it was.

    ONNX's inference works on a serialised copy and returns another, so a model's weights would
    be copied four times (serialise, parse in C++, serialise the result, parse it back). It is
    given the model without its large weights instead (see `_without_large_weights`), and the
    result is put back around the original weights: the same model that inferring the whole one
    gives (tests/test_intake_speed.py compares them). Should inference need the values of a
    left-out weight, ONNX fails loudly (its ParseData refuses external tensors) and the whole
    model is inferred as before, so no error or shape depends on the shortcut.
    """
    light, stubbed = _without_large_weights(proto)
    if stubbed:
        try:
            inferred = onnx.shape_inference.infer_shapes(light, check_type=True, strict_mode=True, data_prop=True)
        except INFERENCE_ERRORS:
            pass  # decided on the whole model below, with ONNX's own message
        else:
            return _with_original_weights(proto if consume else _copy(proto), inferred)
    try:
        return onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    except INFERENCE_ERRORS as exc:
        raise ModelError(f"{path.name}: shape inference failed, so the shapes are inconsistent: {quoted(exc)}") from exc


def _without_large_weights(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of the model whose main-graph initializers over SHAPE_INFERENCE_STUB_MIN_ELEMENTS
    are stubs, and how many were stubbed (0: the copy is not worth making, none is returned).

    A stub keeps the name, element type and dims (all that shape inference reads of a weight) and
    is marked as external data, which ONNX's inference refuses to read values from. (The checker
    cannot be given such a copy: since onnx 1.2x it compares raw_data's length with the dims.)
    """
    graph = proto.graph
    large = [i for i, t in enumerate(graph.initializer) if _elements(t) > SHAPE_INFERENCE_STUB_MIN_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL]
    if not large:
        return proto, 0
    light = onnx.ModelProto()
    _copy_fields(light, proto, skip={"graph"})
    _copy_fields(light.graph, graph, skip={"initializer"})
    stubs = set(large)
    for index, tensor in enumerate(graph.initializer):
        if index in stubs:
            stub = light.graph.initializer.add(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims, data_location=onnx.TensorProto.EXTERNAL)
            stub.external_data.add(key="location", value=STUB_LOCATION)
        else:
            light.graph.initializer.add().CopyFrom(tensor)
    return light, len(large)


def _with_original_weights(proto: onnx.ModelProto, inferred: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` with everything shape inference may have written (value_info, outputs, nodes'
    subgraphs, the model's other fields) taken from `inferred`; its own initializers stay, so the
    weights are not copied."""
    for descriptor in proto.DESCRIPTOR.fields:
        if descriptor.name != "graph":
            proto.ClearField(descriptor.name)
    _copy_fields(proto, inferred, skip={"graph"})
    for descriptor in proto.graph.DESCRIPTOR.fields:
        if descriptor.name != "initializer":
            proto.graph.ClearField(descriptor.name)
    _copy_fields(proto.graph, inferred.graph, skip={"initializer"})
    return proto


def _copy_fields(target, source, skip: set[str]) -> None:
    """Copy every field set in `source` into `target` (empty there), but those named in `skip`."""
    for descriptor, value in source.ListFields():
        if descriptor.name in skip:
            continue
        if _is_repeated(descriptor):
            getattr(target, descriptor.name).extend(value)
        elif descriptor.type == FieldDescriptor.TYPE_MESSAGE:
            getattr(target, descriptor.name).CopyFrom(value)
        else:
            setattr(target, descriptor.name, value)


def _copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    copied = onnx.ModelProto()
    copied.CopyFrom(proto)
    return copied


def _elements(tensor: onnx.TensorProto) -> int:
    n = 1
    for d in tensor.dims:
        n *= d
    return n


def _check_consistency(path: Path, proto: onnx.ModelProto) -> None:
    """Shape mismatches ONNX's shape inference lets through (it does not compare a Conv's input
    channels with its weights), which runtimes only report when the model first runs."""
    from edgedeploy.model.shapes import dims_of

    convs = [(index, node) for index, node in enumerate(proto.graph.node) if node.op_type == "Conv" and len(node.input) >= 2]
    if not convs:
        return
    # Only the shapes the checks read: a Conv's data and weight inputs (an initializer's dims
    # first, then the first value_info, input or output that declares them).
    wanted = {name for _, node in convs for name in node.input[:2]}
    shapes: dict[str, tuple] = {t.name: tuple(t.dims) for t in proto.graph.initializer if t.name in wanted}
    for infos in (proto.graph.value_info, proto.graph.input, proto.graph.output):
        for vi in infos:
            if vi.name in wanted and vi.name not in shapes:
                dims = dims_of(vi)
                if dims is not None:
                    shapes[vi.name] = dims

    def known(name: str, axis: int):
        dims = shapes.get(name)
        if dims is None or len(dims) <= abs(axis) - (1 if axis < 0 else 0):
            return None
        value = dims[axis]
        return value if isinstance(value, int) else None

    for index, node in convs:
        label = node.name or f"{node.op_type}_{index}"
        group_attr = next((a for a in node.attribute if a.name == "group"), None)
        group = int(onnx.helper.get_attribute_value(group_attr)) if group_attr is not None else 1
        have, per_group = known(node.input[0], 1), known(node.input[1], 1)
        if have is not None and per_group is not None and have != per_group * group:
            raise ModelError(
                f"{path.name}: node '{label}' (Conv) gets {have} input channels but its weights expect "
                f"{per_group * group} ({per_group} per group x {group} groups); the shapes are inconsistent."
            )


def parse_input_shape_options(values: tuple[str, ...] | list[str]) -> InputShapes:
    """Parse repeated `--input-shape NAME=1x3x224x224` options (a bare `1x3x224x224` means the only input)."""
    shapes: InputShapes = {}
    for raw in values:
        name, sep, dims_text = raw.rpartition("=")
        if not sep:
            name, dims_text = "", raw
        dims_text = dims_text.strip().lower().replace(",", "x")
        try:
            dims = tuple(int(d) for d in dims_text.split("x"))
        except ValueError as exc:
            raise OptionError(
                f"--input-shape '{raw}' is not NAME=DxDx...: dimensions must be whole numbers like 1x3x224x224."
            ) from exc
        if not dims or any(d <= 0 for d in dims):
            raise OptionError(f"--input-shape '{raw}': every dimension must be a positive whole number.")
        if any(d > MAX_DIM for d in dims):
            raise OptionError(f"--input-shape '{raw}': a dimension is larger than {MAX_DIM}.")
        total = 1
        for d in dims:
            total *= d
        if total > MAX_TENSOR_ELEMENTS:
            raise OptionError(f"--input-shape '{raw}' asks for {total} elements, more than any edge device holds.")
        if name in shapes:
            raise OptionError(f"--input-shape names input '{name or '(the only input)'}' twice.")
        shapes[name] = dims
    return shapes


def input_shapes_from(shapes: Mapping[str, Sequence[int]] | list[str] | tuple[str, ...] | str | None) -> dict:
    """{input name: dims} from a mapping, or from the CLI's NAME=1x3x224x224 strings."""
    if not shapes:
        return {}
    if isinstance(shapes, Mapping):
        return {str(name): tuple(int(d) for d in dims) for name, dims in shapes.items()}
    return parse_input_shape_options([shapes] if isinstance(shapes, str) else list(shapes))
