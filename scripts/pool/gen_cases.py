#!/usr/bin/env python3
"""Op-in-context cases from the pool, varied and packed many to a model, for the toolchains.

    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/pool/gen_cases.py [--per-op 12] [--pack 40] [--max-cases 1500]

1. Extract: every node of every pool model ($EDGEDEPLOY_HOME/pool, scripts/pool/build_pool.py)
   whose inputs are float activations of static shape (plus constants) becomes a pattern: op
   type, attributes, each input's shape (constants with their values where small), the producer
   op types of its activations and the op types consuming its outputs, and the model's opset.
   Patterns that differ only in dims are grouped; the smallest member stands for the group.
2. Vary: each representative in its neighbours (none; Relu before and after; its own producer
   and consumer op where that is a one-input elementwise op), in its opset (11, 13, 17 where the
   operator's definition is the same), in its rank (one-input elementwise ops at rank 2, 3, 4) and
   in the attributes the rules read (Pad mode, Resize mode and coordinates, Transpose perm, the
   Reduce ops' keepdims, Softmax axis, Gemm transB, LeakyRelu alpha, ...). Every case is checked
   by ONNX's checker, strict shape inference and onnxruntime; invalid ones are dropped.
3. Pack: independent cases side by side in one model (each its own graph inputs and outputs;
   node names "cNNNN_<role>"), one opset and one split part per model, so one conversion gives
   verdicts on many cases.
A case's part is held-out when every pool model its pattern came from is held out
(catalogue.part_of), else tuning. Writes $EDGEDEPLOY_HOME/pool-cases/<pack>.onnx and .calib.npz,
and tests/fixtures/pool/cases.json (per pack: sha256, opset, part; per case: op, variant, source
models, part). Deterministic (seeded); re-running rewrites the packs.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from catalogue import part_of  # noqa: E402

ROOT = HERE.parents[1]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
POOL = HOME / "pool"
OUT = HOME / "pool-cases"
CASES = ROOT / "tests" / "fixtures" / "pool" / "cases.json"
SMALL = 64  # constants up to this many elements keep their values (axes, shapes, pads, scales)
MAX_WEIGHT_ELEMENTS = 300_000  # keep packs quick to convert
UNARY = {"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Clip", "Elu", "Selu", "Softplus", "Erf", "Abs", "Neg",
         "Exp", "Log", "Sqrt", "Reciprocal", "PRelu", "Identity", "Mish", "Gelu", "Floor", "Ceil", "Round", "Sin", "Cos"}
SKIP = {"Constant", "If", "Loop", "Scan", "ConstantOfShape", "Shape", "Size", "NonZero", "NonMaxSuppression", "TopK", "Range", "RandomNormalLike",
        "RandomUniformLike", "Dropout", "Cast", "CastLike"}
FLOATS = {TensorProto.FLOAT}


def _attr(a: onnx.AttributeProto):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    if isinstance(v, (int, float, str)):
        return v
    raise ValueError("tensor or graph attribute")


def _shapes(model: onnx.ModelProto) -> dict:
    g = model.graph
    out = {}
    for vi in itertools.chain(g.input, g.value_info, g.output):
        t = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else None
        out[vi.name] = (dims, t.elem_type)
    return out


def extract(name: str, model: onnx.ModelProto) -> list[dict]:
    """The patterns of one model (see the module docstring)."""
    model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    shapes = _shapes(model)
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    producer = {}
    for n in g.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        for o in n.output:
            producer[o] = n.op_type
    consumers = defaultdict(list)
    for n in g.node:
        for i in n.input:
            consumers[i].append(n.op_type)
    found = []
    for n in g.node:
        if n.op_type in SKIP or n.domain not in ("", "ai.onnx"):
            continue
        try:
            pattern = _pattern(n, shapes, consts, producer, consumers, opset)
        except ValueError:
            continue
        if pattern:
            pattern["models"] = [name]
            found.append(pattern)
    return found


def _pattern(n, shapes, consts, producer, consumers, opset) -> dict | None:
    inputs = []
    for i in n.input:
        if i == "":
            inputs.append(None)
        elif i in consts:
            v = consts[i]
            if v.dtype.kind not in "fiub":
                return None
            inputs.append({"const": list(v.shape), "dtype": v.dtype.name, "values": v.tolist() if v.size <= SMALL else None})
            if v.size > SMALL and v.dtype.kind != "f":
                return None  # a large integer constant (an index table) cannot be made up
        else:
            dims, et = shapes.get(i, (None, 0))
            if not dims or None in dims or et not in FLOATS:
                return None
            inputs.append({"act": dims, "from": producer.get(i, "(input)")})
    if not any(x and "act" in x for x in inputs):
        return None
    outs = []
    for o in n.output:
        dims, et = shapes.get(o, (None, 0))
        if o and (dims is None or None in dims or et not in FLOATS):
            return None
        outs.append({"dims": dims, "to": sorted(set(consumers.get(o, []))) or ["(output)"]} if o else None)
    return {"op": n.op_type, "attrs": {a.name: _attr(a) for a in n.attribute}, "inputs": inputs, "outputs": outs, "opset": opset}


def group_key(p: dict) -> str:
    """Shape-free identity: op, attributes, input ranks and small constants, neighbours, opset."""
    ins = [None if x is None else (["act", len(x["act"]), x["from"]] if "act" in x else ["const", len(x["const"]), x["values"] if x["values"] is not None and len(x["const"]) <= 1 else None]) for x in p["inputs"]]
    outs = [None if o is None else o["to"] for o in p["outputs"]]
    return json.dumps([p["op"], p["attrs"], ins, outs, p["opset"]], sort_keys=True)


def weight_elements(p: dict) -> int:
    return sum(int(np.prod(x["const"])) if x and "const" in x else int(np.prod(x["act"])) if x else 0 for x in p["inputs"])


# --- variation -----------------------------------------------------------------------------------

ONE_INPUT_NEIGHBOURS = {"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "Elu", "Abs", "Neg", "Softplus", "Exp", "Erf", "Identity", "Floor"}
POSITIVE_INPUT = {"Log", "Sqrt", "Reciprocal", "Pow", "Div"}
RANK_SHAPES = {2: [1, 64], 3: [1, 16, 32], 4: [1, 8, 8, 8]}
TRANSPOSE_PERMS = {2: [[1, 0]], 3: [[0, 2, 1], [1, 0, 2], [2, 1, 0], [1, 2, 0]], 4: [[0, 2, 3, 1], [0, 3, 1, 2], [0, 3, 2, 1], [0, 2, 1, 3], [1, 0, 2, 3]],
                   5: [[0, 2, 1, 3, 4], [0, 1, 3, 4, 2]]}
ATTR_VARIANTS = {
    "Pad": [{"mode": m} for m in ("constant", "reflect", "edge")],
    "Resize": [{"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
               {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
               {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
               {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor"}],
    "ReduceMean": [{"keepdims": 0}, {"keepdims": 1}], "ReduceSum": [{"keepdims": 0}, {"keepdims": 1}],
    "ReduceMax": [{"keepdims": 0}, {"keepdims": 1}], "ReduceL2": [{"keepdims": 0}, {"keepdims": 1}],
    "Softmax": [{"axis": -1}, {"axis": 1}], "LogSoftmax": [{"axis": -1}, {"axis": 1}],
    "LeakyRelu": [{"alpha": 0.01}, {"alpha": 0.2}], "HardSigmoid": [{"alpha": 0.2, "beta": 0.5}, {"alpha": 1 / 6, "beta": 0.5}],
    "MaxPool": [{"ceil_mode": 0}, {"ceil_mode": 1}], "AveragePool": [{"ceil_mode": 0}, {"ceil_mode": 1}, {"count_include_pad": 1}],
    "Gelu": [{"approximate": "none"}, {"approximate": "tanh"}], "Flatten": [{"axis": 1}, {"axis": 2}],
    "Elu": [{"alpha": 1.0}, {"alpha": 0.5}],
}


def same_definition(op: str, a: int, b: int) -> bool:
    try:
        return onnx.defs.get_schema(op, a).since_version == onnx.defs.get_schema(op, b).since_version
    except Exception:  # noqa: BLE001 - not defined at one of the opsets
        return False


def variants(p: dict) -> list[dict]:
    """The base case (its own neighbours where they are one-input ops, at its own opset) and its variations."""
    act = next(x for x in p["inputs"] if x and "act" in x)
    out0 = next((o for o in p["outputs"] if o), {"to": []})
    pre = act["from"] if act["from"] in ONE_INPUT_NEIGHBOURS else "none"
    post = next((c for c in out0["to"] if c in ONE_INPUT_NEIGHBOURS), "none")
    base = {"pre": pre, "post": post, "opset": p["opset"], "attrs": {}, "rank": None, "what": "as found"}
    out = [base]
    for pre2, post2 in (("none", "none"), ("Relu", "Relu")):
        if (pre2, post2) != (pre, post):
            out.append({**base, "pre": pre2, "post": post2, "what": f"neighbours {pre2}/{post2}"})
    for o in (11, 13, 17):
        if o != p["opset"] and same_definition(p["op"], o, p["opset"]) and not (o < 13 and p["op"] in ("Pad", "Resize", "Clip", "Split", "Squeeze", "Unsqueeze", "ReduceSum")):
            out.append({**base, "opset": o, "what": f"opset {o}"})
    for change in ATTR_VARIANTS.get(p["op"], []):
        if any(p["attrs"].get(k) != v for k, v in change.items()):
            out.append({**base, "attrs": change, "what": "attributes " + ",".join(f"{k}={v}" for k, v in change.items())})
    rank = len(act["act"])
    if p["op"] == "Transpose":
        for perm in TRANSPOSE_PERMS.get(rank, []):
            if perm != p["attrs"].get("perm"):
                out.append({**base, "attrs": {"perm": perm}, "what": f"perm {perm}"})
    if sum(1 for x in p["inputs"] if x) == 1 and not p["attrs"] and p["op"] not in ("Flatten", "GlobalAveragePool", "GlobalMaxPool"):
        for r, shape in RANK_SHAPES.items():
            if r != rank:
                out.append({**base, "rank": shape, "what": f"rank {r}"})
    return out


# --- building cases and packs --------------------------------------------------------------------


def case_nodes(idx: int, p: dict, v: dict, rng: np.random.Generator):
    """(nodes, graph inputs, graph outputs, initializers) of one case, every name prefixed cNNNN_."""
    tag = f"c{idx:04d}_"
    nodes, ins, outs, inits = [], [], [], []
    names = []
    for k, x in enumerate(p["inputs"]):
        if x is None:
            names.append("")
        elif "act" in x:
            shape = v["rank"] or x["act"]
            gi = f"{tag}in{k}"
            ins.append(helper.make_tensor_value_info(gi, TensorProto.FLOAT, shape))
            if v["pre"] != "none":
                nodes.append(helper.make_node(v["pre"], [gi], [f"{tag}pre{k}_out"], name=f"{tag}pre{k}"))
                gi = f"{tag}pre{k}_out"
            names.append(gi)
        else:
            dtype = np.dtype(x["dtype"])
            values = np.array(x["values"], dtype=dtype).reshape(x["const"]) if x["values"] is not None else (rng.standard_normal(x["const"]) * 0.1).astype(dtype)
            inits.append(numpy_helper.from_array(values, f"{tag}k{k}"))
            names.append(f"{tag}k{k}")
    attrs = {**p["attrs"], **v["attrs"]}
    op_outs = [f"{tag}out{j}" if o else "" for j, o in enumerate(p["outputs"])]
    nodes.append(helper.make_node(p["op"], names, op_outs, name=f"{tag}{p['op']}", **attrs))
    for j, o in enumerate(op_outs):
        if not o:
            continue
        if v["post"] != "none" and j == 0:
            nodes.append(helper.make_node(v["post"], [o], [f"{tag}post{j}_out"], name=f"{tag}post{j}"))
            o = f"{tag}post{j}_out"
        outs.append(helper.make_tensor_value_info(o, TensorProto.FLOAT, None))
    return nodes, ins, outs, inits


def make_model(parts: list, opset: int) -> onnx.ModelProto:
    nodes, ins, outs, inits = ([], [], [], [])
    for n, i, o, k in parts:
        nodes += n
        ins += i
        outs += o
        inits += k
    graph = helper.make_graph(nodes, "pool_cases", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="edgedeploy scripts/pool/gen_cases.py")
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    onnx.checker.check_model(model, full_check=True)
    return model


def feeds_for(model: onnx.ModelProto, rng: np.random.Generator, samples: int) -> dict:
    positive = {i for n in model.graph.node if n.op_type in POSITIVE_INPUT for i in n.input}
    out = {}
    for gi in model.graph.input:
        shape = [samples] + [d.dim_value for d in gi.type.tensor_type.shape.dim][1:]
        x = rng.uniform(-1, 1, shape)
        tag = gi.name.split("_", 1)[0]
        if any(p.startswith(tag) for p in positive):
            x = rng.uniform(0.5, 2.0, shape)
        out[gi.name] = x.astype(np.float32)
    return out


def valid(p: dict, v: dict) -> bool:
    """The case alone passes the checker, strict shape inference and runs in onnxruntime with finite outputs."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    try:
        model = make_model([case_nodes(0, p, v, rng)], v["opset"])
        if any(not o.type.tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in o.type.tensor_type.shape.dim) for o in model.graph.output):
            return False
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        feeds = {k: v[:1] for k, v in feeds_for(model, rng, 1).items()}
        return all(np.isfinite(r).all() for r in sess.run(None, feeds))
    except Exception:  # noqa: BLE001 - an invalid variation: dropped
        return False


def representatives(manifest: dict, per_op: int) -> list[dict]:
    """One pattern per group (the smallest), the most widespread groups of each op type first."""
    groups: dict[str, dict] = {}
    for name in sorted(manifest["models"]):
        path = POOL / f"{name}.onnx"
        if not path.is_file():
            continue
        for p in extract(name, onnx.load(str(path))):
            key = group_key(p)
            g = groups.get(key)
            if g is None:
                groups[key] = {**p, "count": 1}
            else:
                g["count"] += 1
                g["models"] = sorted(set(g["models"]) | set(p["models"]))
                if weight_elements(p) < weight_elements(g):
                    groups[key] = {**p, "count": g["count"], "models": g["models"]}
    by_op = defaultdict(list)
    for key, g in sorted(groups.items()):
        if weight_elements(g) <= MAX_WEIGHT_ELEMENTS:
            by_op[g["op"]].append(g)
    chosen = []
    for op in sorted(by_op):
        chosen += sorted(by_op[op], key=lambda g: (-len(g["models"]), -g["count"], group_key(g)))[:per_op]
    print(f"{len(groups)} pattern groups of {len(by_op)} op types; {len(chosen)} representatives", flush=True)
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-op", type=int, default=8, help="pattern groups per op type")
    parser.add_argument("--pack", type=int, default=40, help="cases per packed model")
    parser.add_argument("--max-cases", type=int, default=1500)
    args = parser.parse_args()
    manifest = json.loads((ROOT / "tests" / "fixtures" / "pool" / "manifest.json").read_text())
    cases, seen = [], set()
    for g in representatives(manifest, args.per_op):
        part = "held-out" if all(part_of(m) == "held-out" for m in g["models"]) else "tuning"
        for v in variants(g):
            sig = hashlib.sha256(json.dumps([g["op"], g["attrs"], g["inputs"], g["outputs"], v], sort_keys=True, default=str).encode()).hexdigest()[:16]
            if sig in seen or not valid(g, v):
                continue
            seen.add(sig)
            cases.append({"pattern": g, "variant": v, "part": part, "id": sig})
    cases = cases[: args.max_cases]
    print(f"{len(cases)} valid cases", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    packs, records = defaultdict(list), []
    for c in cases:
        packs[(c["part"], c["variant"]["opset"])].append(c)
    rng = np.random.default_rng(27)
    idx = 0
    for (part, opset), members in sorted(packs.items()):
        for start in range(0, len(members), args.pack):
            chunk = members[start : start + args.pack]
            name = f"pack_{'h' if part == 'held-out' else 't'}_o{opset}_{start // args.pack:03d}"
            parts, entries = [], []
            for c in chunk:
                idx += 1
                parts.append(case_nodes(idx, c["pattern"], c["variant"], rng))
                entries.append({"case": f"c{idx:04d}", "id": c["id"], "op": c["pattern"]["op"], "variant": c["variant"]["what"],
                                "opset": opset, "neighbours": [c["variant"]["pre"], c["variant"]["post"]],
                                "attrs": {**c["pattern"]["attrs"], **c["variant"]["attrs"]},
                                "inputs": [None if x is None else (x["act"] if "act" in x else {"const": x["const"]}) for x in c["pattern"]["inputs"]]
                                if not c["variant"]["rank"] else [c["variant"]["rank"]],
                                "from": c["pattern"]["models"][:6], "from_count": len(c["pattern"]["models"])})
            model = make_model(parts, opset)
            path = OUT / f"{name}.onnx"
            path.write_bytes(model.SerializeToString())
            np.savez(OUT / f"{name}.calib.npz", **feeds_for(model, rng, 2))
            records.append({"name": name, "part": part, "opset": opset, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                            "nodes": len(model.graph.node), "cases": entries})
            print(f"{name}: {len(chunk)} cases, {len(model.graph.node)} nodes", flush=True)
    CASES.write_text(json.dumps({"about": "Packed op-in-context cases from the pool (scripts/pool/gen_cases.py); models in $EDGEDEPLOY_HOME/pool-cases.",
                                 "models": records}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
