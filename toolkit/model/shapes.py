"""Tensor shapes: reading them from a model, and pinning the dynamic dimensions of its inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx

from edgedeploy.errors import OptionError

if TYPE_CHECKING:
    from edgedeploy.model.intake import LoadedModel

# Input name -> dims. The empty name "" stands for "the model's only input".
InputShapes = dict[str, tuple[int, ...]]

Shape = tuple[int | str | None, ...]


def dims_of(vi: onnx.ValueInfoProto) -> Shape | None:
    """The dims of a ValueInfo: ints where known, the symbol or None where dynamic; None if rank is unknown."""
    kind = vi.type
    if not kind.HasField("tensor_type"):
        return None
    tensor = kind.tensor_type
    if not tensor.HasField("shape"):
        return None
    out: list[int | str | None] = []
    # The audit reads every tensor's dims (2,700 times on DenseNet-121): a size that is set and not
    # 0 is read without asking HasField first.
    for d in tensor.shape.dim:
        size = d.dim_value
        if size or d.HasField("dim_value"):
            out.append(size)
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return tuple(out)


def dynamic_axes(vi: onnx.ValueInfoProto) -> list[int]:
    """Axes of an input whose size is not a fixed number."""
    dims = dims_of(vi)
    if dims is None:
        return []
    return [i for i, d in enumerate(dims) if not isinstance(d, int)]


def is_static(shape: Shape | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def numel(shape: Shape | None) -> int | None:
    """Number of elements, or None when any dimension is unknown."""
    if not is_static(shape):
        return None
    total = 1
    for d in shape:  # type: ignore[union-attr]
        total *= int(d)  # type: ignore[arg-type]
    return total


def shape_of(model: "LoadedModel", name: str) -> Shape | None:
    """Shape of any tensor in the model: initializers, graph inputs/outputs and inferred value_info."""
    for t in model.graph.initializer:
        if t.name == name:
            return tuple(int(d) for d in t.dims)
    vi = model.value_infos().get(name)
    if vi is None:
        return None
    return dims_of(vi)


def pin_input_shapes(proto: onnx.ModelProto, shapes: InputShapes) -> dict[str, tuple[int, ...]]:
    """Write the user's pinned shapes into the model's inputs; return what was pinned, by input name.

    A pin must match the input's rank and every dimension the model already fixes.
    """
    inits = {t.name for t in proto.graph.initializer}
    inputs = [vi for vi in proto.graph.input if vi.name not in inits]
    by_name = {vi.name: vi for vi in inputs}
    pinned: dict[str, tuple[int, ...]] = {}
    for name, dims in shapes.items():
        if name == "":
            if len(inputs) != 1:
                raise OptionError(
                    "--input-shape without a name only works for a model with one input; this one has "
                    f"{len(inputs)}: {', '.join(by_name)}. Use NAME=DxDx..."
                )
            name = inputs[0].name
        vi = by_name.get(name)
        if vi is None:
            raise OptionError(f"--input-shape names '{name}', which is not an input of the model (inputs: {', '.join(by_name)}).")
        current = dims_of(vi)
        if current is not None and len(current) != len(dims):
            raise OptionError(
                f"--input-shape {name}={'x'.join(map(str, dims))} has rank {len(dims)}, but input '{name}' has rank {len(current)} "
                f"({_show(current)})."
            )
        if current is not None:
            for axis, (have, want) in enumerate(zip(current, dims)):
                if isinstance(have, int) and have != want:
                    raise OptionError(
                        f"--input-shape {name}={'x'.join(map(str, dims))} changes axis {axis} from {have} to {want}, "
                        f"but the model fixes it ({_show(current)}); only dynamic dimensions can be pinned."
                    )
        shape_proto = vi.type.tensor_type.shape
        shape_proto.ClearField("dim")
        for d in dims:
            shape_proto.dim.add().dim_value = d
        pinned[name] = tuple(dims)
    return pinned


def _show(shape: Shape) -> str:
    return "x".join("?" if d is None else str(d) for d in shape)


def show_shape(shape: Shape | None) -> str:
    """A shape as users write it: 1x3x224x224, with symbols for dynamic dims; '?' when unknown."""
    if shape is None:
        return "?"
    return _show(shape) if shape else "scalar"
