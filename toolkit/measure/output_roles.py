"""What a model's outputs hold, from evidence only: box/score splits and whole-output roles.

A report that says "boxes" or "scores" makes a claim about the model; a shape alone cannot back
it (a text recogniser's [1, 40, C] CTC softmax and a face detector's 16 regressors, 12 of them
keypoints, both look like "4 box coordinates, then scores"). So an output is split, or given a
role, only on one of these, and the report names which:
  declared  `--detection OUTPUT[:AXIS]=ROLE:RANGE,...` (the user says what the channels are);
  concat    the output is produced by a Concat whose every input is known: a score branch
            (produced by Softmax/Sigmoid through shape-only ops, or named like scores), a box
            or keypoint branch (named so), or, beside score branches, the one other input when it
            is 4 wide (YOLOv8's Concat of the decoded boxes and the Sigmoid class scores);
  names     the output's own name says what it holds (boxes/bbox/loc/regressors, scores/conf/
            cls/logits, kps/keypoints/landmarks): a role for the whole output, no split.
Without evidence there is no split and no role: the output is compared as a whole.
"""

from __future__ import annotations

import re

from edgedeploy.errors import OptionError
from edgedeploy.interrupts import reraise_if_interrupted

ROLES = ("boxes", "scores", "keypoints", "other")
# Whole words (tokens) and word beginnings that name a role. Short words match whole only
# ("loc" is not "local"); a name with words of two roles names neither.
ROLE_WORDS = {
    "boxes": ({"loc", "locs", "reg", "deltas", "bb"}, ("box", "bbox", "regress")),
    "scores": ({"cls", "obj", "conf"}, ("score", "confidence", "class", "logit", "prob")),
    "keypoints": ({"kps", "kpt", "kpts", "lmk"}, ("keypoint", "landmark")),
}
ROLE_TEXT = {"boxes": "box regression", "scores": "scores", "keypoints": "keypoints", "other": "other values"}
PROBABILITY_OPS = {"Softmax", "Sigmoid", "LogSoftmax"}
SHAPE_ONLY_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose"}
# A box branch recognised by structure alone (no name) is this wide: x, y, w, h or x1, y1, x2, y2.
BOX_WIDTH = 4


def name_role(name: str) -> str | None:
    """The role a tensor's or node's name says it holds, or None (no role word, or two roles)."""
    words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name or "").lower())
    found = {role for role, (whole, starts) in ROLE_WORDS.items() for word in words if word in whole or word.startswith(starts)}
    return found.pop() if len(found) == 1 else None


def _range(text: str, size: int | None, where: str) -> tuple[int, int]:
    """'0-3' (inclusive), '4-' (to the end) or '5' -> (start, stop)."""
    match = re.fullmatch(r"(\d+)(?:-(\d*))?", text.strip())
    if not match:
        raise OptionError(f"--detection {where}: {text!r} is not a channel range such as 0-3, 4- or 5.")
    start = int(match.group(1))
    if match.group(2) is None:
        stop = start + 1
    elif match.group(2) == "":
        if size is None:
            raise OptionError(f"--detection {where}: an open range {text!r} needs the axis's size, which the model does not fix; give the last channel.")
        stop = size
    else:
        stop = int(match.group(2)) + 1
    if stop <= start or (size is not None and stop > size):
        raise OptionError(f"--detection {where}: channels {text!r} do not fit an axis of {size} channels.")
    return start, stop


def _output_dims(graph) -> dict[str, list[int | None]]:
    return {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim] for vi in graph.output}


def _split_name_axis(target: str, dims: dict) -> tuple[str, int | None]:
    """'OUTPUT' or 'OUTPUT:AXIS' -> (output, axis or None); an output named with a colon wins."""
    if target in dims:
        return target, None
    match = re.fullmatch(r"(.*):(-?\d+)", target)
    if match and match.group(1) in dims:
        return match.group(1), int(match.group(2))
    raise OptionError(f"--detection: the model has no output named {target!r} (outputs: {', '.join(dims)}).")


def parse_detection(values, graph) -> dict[str, dict]:
    """The layouts the user declared with --detection, checked against the model's outputs.

    Each value is OUTPUT[:AXIS]=ROLE:RANGE[,ROLE:RANGE...]; AXIS defaults to the last; ROLE is
    one of ROLES; RANGE is 0-3, 4- or 5. Ranges may not overlap.
    """
    dims = _output_dims(graph)
    layouts: dict[str, dict] = {}
    for value in [values] if isinstance(values, str) else list(values or ()):
        target, sep, spec = str(value).rpartition("=")
        if not sep or not target or not spec:
            raise OptionError(f"--detection {value!r}: give OUTPUT=ROLE:RANGE,..., e.g. output0:1=boxes:0-3,scores:4-.")
        name, axis = _split_name_axis(target, dims)
        rank = len(dims[name])
        axis = rank - 1 if axis is None else axis
        if not (-rank <= axis < rank) or rank < 2:
            raise OptionError(f"--detection {value!r}: output {name!r} has {rank} axes; axis {axis} is not one of them.")
        axis %= rank
        parts = []
        for item in spec.split(","):
            role, _, channels = item.strip().partition(":")
            if role not in ROLES:
                raise OptionError(f"--detection {value!r}: {role!r} is not a role ({', '.join(ROLES)}).")
            start, stop = _range(channels, dims[name][axis], repr(value))
            parts.append({"role": role, "start": start, "stop": stop})
        parts.sort(key=lambda p: p["start"])
        if any(a["stop"] > b["start"] for a, b in zip(parts, parts[1:])):
            raise OptionError(f"--detection {value!r}: the channel ranges overlap.")
        layouts[name] = {"axis": axis, "parts": parts, "evidence": f"declared with --detection {value}"}
    return layouts


def _shapes(model) -> dict[str, list[int | None]]:
    """Every tensor's dims the model records (value_info, inputs, outputs, initializers); shape
    inference is run on a copy when the model records none for its inner tensors."""
    import onnx

    graph = model.graph
    if not graph.value_info:
        try:
            graph = onnx.shape_inference.infer_shapes(model).graph
        except Exception as exc:  # noqa: BLE001 - no inferred shapes means no Concat evidence, nothing worse
            reraise_if_interrupted(exc)
            graph = model.graph
    shapes = {vi.name: [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim] for vi in (*graph.value_info, *graph.input, *graph.output)}
    shapes.update({init.name: list(init.dims) for init in graph.initializer})
    return shapes


def _branch_role(tensor: str, producer: dict) -> tuple[str | None, str]:
    """(role, why) of one Concat input: by its name or its producer's, else by a probability op."""
    node = producer.get(tensor)
    for label, name in (("its name", tensor), ("its producer's name", node.name if node is not None else "")):
        role = name_role(name)
        if role:
            return role, f"{label} {name!r}"
    seen = 0
    while node is not None and node.op_type in SHAPE_ONLY_OPS and node.input and seen < 16:
        node = producer.get(node.input[0])
        seen += 1
    if node is not None and node.op_type in PROBABILITY_OPS:
        return "scores", f"produced by {node.op_type}"
    return None, "not known"


def concat_layout(name: str, producer: dict, shapes: dict) -> dict | None:
    """The split of an output produced (through Identity) by a Concat of a box and a score branch, else None."""
    node = producer.get(name)
    while node is not None and node.op_type == "Identity":
        node = producer.get(node.input[0])
    out_dims = shapes.get(name)
    if node is None or node.op_type != "Concat" or len(node.input) < 2 or not out_dims:
        return None
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % len(out_dims)
    widths = [(shapes.get(t) or [None] * (axis + 1))[axis] if len(shapes.get(t) or []) == len(out_dims) else None for t in node.input]
    if any(w is None for w in widths):
        return None
    roles = [_branch_role(t, producer) for t in node.input]
    unknown = [i for i, (role, _) in enumerate(roles) if role is None]
    if len(unknown) == 1 and widths[unknown[0]] == BOX_WIDTH and sum(r == "scores" for r, _ in roles) == len(roles) - 1:
        roles[unknown[0]] = ("boxes", f"the one other input, {BOX_WIDTH} wide")
    kinds = {role for role, _ in roles}
    if None in kinds or "scores" not in kinds or not kinds & {"boxes", "keypoints"}:
        return None
    parts, start, said = [], 0, []
    for tensor, width, (role, why) in zip(node.input, widths, roles):
        parts.append({"role": role, "start": start, "stop": start + width})
        said.append(f"{role} {start}-{start + width - 1} ({why})")
        start += width
    return {"axis": axis, "parts": parts, "evidence": f"a Concat on axis {axis} of {', '.join(said)}"}


def output_layouts(model, declared: dict[str, dict] | None = None) -> dict[str, dict]:
    """Output name -> {"axis", "parts", "evidence"} (a split) or {"role", "evidence"} (the whole
    output); outputs without evidence are left out. The user's declaration comes first."""
    graph = model.graph
    layouts = dict(declared or {})
    producer = {out: node for node in graph.node for out in node.output}
    shapes = None
    for vi in graph.output:
        if vi.name in layouts:
            continue
        if producer.get(vi.name) is not None:
            shapes = shapes if shapes is not None else _shapes(model)
            split = concat_layout(vi.name, producer, shapes)
            if split is not None:
                layouts[vi.name] = split
                continue
        role = name_role(vi.name)
        if role:
            layouts[vi.name] = {"role": role, "evidence": f"its name {vi.name!r}"}
    return layouts
