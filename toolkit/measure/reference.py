"""The reference: the ONNX model on ONNX Runtime's CPU provider in fp32, on this machine.

It is the "before" of every accuracy figure (build verification, `measure`'s output check,
`fix`'s tolerance check), so there is one implementation, here, and every caller feeds it the
very inputs its candidate saw. Inputs are arrays with the samples along axis 0 (the dataset
format); the runner feeds them in batches the model accepts:
- a model whose batch axis is fixed at B > 1 gets chunks of exactly B (a short last chunk is
  dropped, and the notes say so);
- a model pinned at batch 1 is probed once: when a batch-free copy computes every sample of a
  batch of two exactly as alone (a Reshape to [1, -1] does not), samples go 32 at a time
  through that copy, else one at a time.
Results are cached per (model bytes, inputs) in memory and, when a cache folder is given, on
disk, so a multi-chip build computes its reference once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from edgedeploy.artifacts import atomic_write_bytes, atomic_write_json
from edgedeploy.interrupts import reraise_if_interrupted
from edgedeploy.toolchains.worker_arrays import held_whole, take_feed

# Samples per run for models whose batch axis can be freed: amortises the call overhead while
# the activations of edge-sized models stay modest.
FREE_BATCH = 32
# Silence ONNX Runtime's own error printing (3 = errors only would still print the probe's
# expected failures in red on the terminal; 4 = fatal only). Failures still raise.
ORT_QUIET = 4
CACHE_SCHEMA = "edgedeploy.reference-cache/1"


@dataclass
class ReferenceOutputs:
    """The reference's outputs (by output name, samples along axis 0) and how they were computed."""

    outputs: dict[str, np.ndarray]
    samples: int
    batch_size: int
    runtime: str
    notes: list[str] = field(default_factory=list)
    from_cache: bool = False

    def describe(self) -> dict:
        return {"runtime": self.runtime, "samples": self.samples, "batch_size": self.batch_size, "notes": list(self.notes), "from_cache": self.from_cache}


class ReferenceError(ValueError):
    """The reference could not run on these inputs (the sentence says why)."""


def inputs_digest(inputs: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for name in sorted(inputs):
        array = np.ascontiguousarray(inputs[name])
        digest.update(name.encode("utf-8", "surrogatepass"))
        digest.update(str(array.dtype).encode())
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _session(model_bytes: bytes, threads: int | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = ORT_QUIET
    if threads:
        options.intra_op_num_threads = int(threads)
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _batch_free_copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for vi in list(copy.graph.input) + list(copy.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].dim_param = "edgedeploy_batch"
    del copy.graph.value_info[:]
    return copy


class ReferenceRunner:
    """ONNX Runtime fp32 on the CPU for one model (a ModelProto or an .onnx path)."""

    def __init__(self, model: onnx.ModelProto | Path, cache_dir: Path | None = None, threads: int | None = None):
        if isinstance(model, onnx.ModelProto):
            self.proto = model
            self.model_bytes = model.SerializeToString()
        else:
            self.model_bytes = Path(model).read_bytes()
            self.proto = onnx.load_from_string(self.model_bytes)
        self.model_sha256 = hashlib.sha256(self.model_bytes).hexdigest()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.threads = threads
        self._session = None
        self._free_session = None
        self._batchable: bool | None = None
        self._memo: dict[str, ReferenceOutputs] = {}

    # -- what the model is ------------------------------------------------------------------
    @property
    def session(self):
        if self._session is None:
            self._session = _session(self.model_bytes, self.threads)
        return self._session

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.session.get_inputs()]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.session.get_outputs()]

    def whole_inputs(self, inputs: dict[str, np.ndarray]) -> frozenset:
        """The inputs whose data holds whole samples: one axis more than the model's input
        (edgedeploy.datasets: an input whose leading axis is not a batch axis, held [N, *shape])."""
        # From the model's graph, not an ONNX Runtime session: asking must not start one (an import
        # a signal cut short is for the caller's guarded run to report, tests/faults/test_signals.py).
        ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in self.proto.graph.input if i.type.tensor_type.HasField("shape")}
        return frozenset(held_whole(inputs, ranks))

    def fixed_batch(self, whole: frozenset = frozenset()) -> int | None:
        """The batch axis the model's inputs fix (None: dynamic); ReferenceError if they disagree.
        Inputs held `whole` have no batch axis of their own and are left out."""
        fixed = {i.shape[0] for i in self.session.get_inputs() if i.name not in whole and i.shape and isinstance(i.shape[0], int)}
        if len(fixed) > 1:
            raise ReferenceError(f"the model's inputs have different fixed batch sizes {sorted(fixed)}")
        return fixed.pop() if fixed else None

    def accepts_batches(self, inputs: dict[str, np.ndarray]) -> bool:
        """Whether a batch-free copy computes each sample of a batch of 2 exactly as alone (probed once)."""
        if self._batchable is None:
            self._batchable = self._probe_batches(inputs)
        return self._batchable

    def _probe_batches(self, inputs: dict[str, np.ndarray]) -> bool:
        if not inputs or min(len(v) for v in inputs.values()) < 2 or self.whole_inputs(inputs):
            # Whole samples (a recurrent state) do not stack on the model's leading axis.
            return False
        # Outside the try: an ONNX Runtime that cannot be imported (or whose import a signal cut
        # short) is not an answer about this model, and the build must not go on one sample at a time.
        import onnxruntime  # noqa: F401

        try:
            free = _session(_batch_free_copy(self.proto).SerializeToString(), self.threads)
            two = free.run(None, {k: v[:2] for k, v in inputs.items()})
            one = free.run(None, {k: v[:1] for k, v in inputs.items()})
        except Exception as exc:  # noqa: BLE001 - any failure of the probe means: one sample at a time
            reraise_if_interrupted(exc)
            return False
        if not all(np.asarray(a).ndim and np.asarray(a).shape[0] == 2 and np.allclose(np.asarray(a)[:1], b, rtol=1e-4, atol=1e-5) for a, b in zip(two, one)):
            return False
        self._free_session = free
        return True

    # -- running ----------------------------------------------------------------------------
    def run(self, inputs: dict[str, np.ndarray]) -> ReferenceOutputs:
        """The outputs on `inputs` (samples along axis 0), from the cache when these inputs ran before."""
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise ReferenceError(f"the data has no values for input(s) {', '.join(missing)}")
        inputs = {n: inputs[n] for n in self.input_names}
        key = f"{self.model_sha256[:32]}-{inputs_digest(inputs)[:32]}"
        if key in self._memo:
            return self._memo[key]
        cached = self._load_cached(key)
        if cached is not None:
            self._memo[key] = cached
            return cached
        result = self._compute(inputs)
        self._memo[key] = result
        self._store_cached(key, result)
        return result

    def _compute(self, inputs: dict[str, np.ndarray]) -> ReferenceOutputs:
        import onnxruntime as ort

        count = len(next(iter(inputs.values())))
        notes: list[str] = []
        whole = self.whole_inputs(inputs)
        fixed = 1 if whole else self.fixed_batch()
        session = self.session
        if fixed is None:
            size, used = FREE_BATCH, count
        elif fixed == 1 and self.accepts_batches(inputs):
            session, size, used = self._free_session, FREE_BATCH, count
        else:
            size = fixed
            used = (count // size) * size
            if used == 0:
                raise ReferenceError(f"the data has {count} samples, fewer than the model's fixed batch of {size}")
            if used < count:
                notes.append(f"the last {count - used} samples were dropped: they do not fill the model's fixed batch of {size}")
        names = [o.name for o in session.get_outputs()]
        parts: dict[str, list[np.ndarray]] = {n: [] for n in names}
        try:
            for start in range(0, used, size):
                feed = take_feed(inputs, start, min(start + size, used), whole)
                for name, value in zip(names, session.run(names, feed)):
                    value = np.asarray(value)
                    parts[name].append(value.reshape(1, -1) if value.ndim == 0 else value)
        except Exception as exc:  # noqa: BLE001 - ONNX Runtime's own error, as one sentence
            reraise_if_interrupted(exc)
            raise ReferenceError(f"ONNX Runtime could not run the model on these inputs: {_first_line(exc)}") from exc
        outputs = {n: np.concatenate(p, axis=0) for n, p in parts.items()}
        return ReferenceOutputs(outputs, used, size, f"onnxruntime {ort.__version__} CPUExecutionProvider fp32", notes)

    # -- the disk cache -----------------------------------------------------------------------
    def _load_cached(self, key: str) -> ReferenceOutputs | None:
        if self.cache_dir is None:
            return None
        data, meta = self.cache_dir / f"{key}.npz", self.cache_dir / f"{key}.json"
        try:
            info = json.loads(meta.read_text())
            if info.get("schema") != CACHE_SCHEMA:
                return None
            with np.load(data, allow_pickle=False) as archive:
                outputs = {name: archive[f"o{i}"] for i, name in enumerate(info["outputs"])}
        except (OSError, ValueError, KeyError):
            return None
        return ReferenceOutputs(outputs, info["samples"], info["batch_size"], info["runtime"], info["notes"], from_cache=True)

    def _store_cached(self, key: str, result: ReferenceOutputs) -> None:
        if self.cache_dir is None:
            return
        import io

        buffer = io.BytesIO()
        # Keyed by index: output names may be anything ONNX allows, .npz keys may not.
        np.savez(buffer, **{f"o{i}": v for i, v in enumerate(result.outputs.values())})
        try:
            atomic_write_bytes(self.cache_dir / f"{key}.npz", buffer.getvalue())
            atomic_write_json(
                self.cache_dir / f"{key}.json",
                {"schema": CACHE_SCHEMA, "outputs": list(result.outputs), "samples": result.samples, "batch_size": result.batch_size, "runtime": result.runtime, "notes": result.notes},
            )
        except OSError:
            pass  # a cache that cannot be written is only slower


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return type(exc).__name__


def default_cache_dir() -> Path:
    from edgedeploy.toolchains.environments import edgedeploy_home

    return edgedeploy_home() / "cache" / "reference"
