"""What the TensorRT rules read off a node: integer lists, per-axis attributes, ranges."""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView


def ints(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]


def spatial_values(node: NodeView, attr: str, default: int) -> list[int]:
    """A per-spatial-axis attribute (kernel_shape, strides, dilations), filled with `default`."""
    kernel = ints(node.attr("kernel_shape"))
    if not kernel:
        w = node.input(1)
        if w is not None and w.shape is not None and len(w.shape) > 2:
            kernel = [d if isinstance(d, int) else 0 for d in w.shape[2:]]
    if attr == "kernel_shape":
        return kernel
    values = ints(node.attr(attr))
    return values or [default] * len(kernel)


def out_of(values, low: int, high: int) -> list[int]:
    return [v for v in values if not (low <= v <= high)]
