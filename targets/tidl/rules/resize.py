"""TIDL's limits on resampling: Resize, Upsample and GridSample."""

from __future__ import annotations

from edgedeploy.audit.rules import NodeView, Offence
from edgedeploy.targets.tidl.rules.documents import RULES


RESIZE_MODES = ("nearest", "linear", "bilinear")
RESIZE_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric")
RESIZE_NEAREST_MODE = {"half_pixel": "round_prefer_ceil", "pytorch_half_pixel": "round_prefer_ceil", "asymmetric": "floor"}


def _resize_scales(node: NodeView) -> tuple[float, ...] | None:
    x, out = node.input(0), node.output(0)
    if x is None or out is None or not x.is_static or not out.is_static or len(x.shape) != len(out.shape):
        return None
    if any(d == 0 for d in x.shape):
        return None
    return tuple(o / i for o, i in zip(out.shape, x.shape))


@RULES.rule("Resize", "Upsample", MODES=RESIZE_MODES)
def resize_mode(node, chip):
    """TIDL resizes with {MODES} interpolation only."""
    mode = node.attr("mode", "nearest")
    if mode not in RESIZE_MODES:
        return Offence(mode)
    return None


@RULES.rule("Resize", "Upsample")
def resize_scales(node, chip):
    """TIDL resizes only height and width, by the same power-of-two factor (1, 2, 4, ...) on both, never shrinking."""
    scales = _resize_scales(node)
    if scales is None or len(scales) < 3:
        return None
    found = []
    if any(s != 1 for s in scales[:-2]):
        found.append(Offence(scales, "scales batch or channel"))
    h, w = scales[-2], scales[-1]
    if h < 1 or w < 1:
        found.append(Offence((h, w), "downscaling"))
    elif h != w:
        found.append(Offence((h, w), "different height and width scales"))
    elif not float(h).is_integer() or int(h) & (int(h) - 1):
        found.append(Offence(h, "not a power of two"))
    return found


@RULES.rule("Resize", COORDINATE_MODES=RESIZE_COORDINATE_MODES)
def resize_attributes(node, chip):
    """TIDL's Resize supports coordinate_transformation_mode {COORDINATE_MODES}, antialias 0, exclude_outside 0 and keep_aspect_ratio_policy stretch; nearest mode must round up (round_prefer_ceil) with the half-pixel modes and floor with asymmetric, and linear mode is not supported with asymmetric."""
    mode = node.attr("mode", "nearest")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    found = []
    if ctm not in RESIZE_COORDINATE_MODES:
        found.append(Offence(ctm, "coordinate_transformation_mode"))
    if int(node.attr("antialias", 0)) != 0:
        found.append(Offence(1, "antialias"))
    if int(node.attr("exclude_outside", 0)) != 0:
        found.append(Offence(1, "exclude_outside"))
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        found.append(Offence(node.attr("keep_aspect_ratio_policy"), "keep_aspect_ratio_policy"))
    if mode == "nearest" and ctm in RESIZE_NEAREST_MODE:
        nearest = node.attr("nearest_mode", "round_prefer_floor")
        if nearest != RESIZE_NEAREST_MODE[ctm]:
            found.append(Offence(nearest, f"nearest_mode with {ctm}"))
    if mode == "linear" and ctm == "asymmetric":
        found.append(Offence("linear+asymmetric", "mode"))
    if ctm == "pytorch_half_pixel":
        out = node.output(0)
        if out is not None and out.shape is not None and any(isinstance(d, int) and d <= 1 for d in out.shape[-2:]):
            found.append(Offence(tuple(out.shape), "pytorch_half_pixel with an output size of 1"))
    return found


GRIDSAMPLE_MODES = ("bilinear", "linear", "nearest")
GRIDSAMPLE_PADDING = "zeros"
GRIDSAMPLE_RANK = 4


@RULES.rule("GridSample", MODES=GRIDSAMPLE_MODES, PADDING=GRIDSAMPLE_PADDING)
def gridsample_modes(node, chip):
    """TIDL's GridSample supports {MODES} interpolation, {PADDING} padding and 2-D grids (4-D inputs) only."""
    found = []
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    if mode not in GRIDSAMPLE_MODES:
        found.append(Offence(mode, "mode"))
    padding = node.attr("padding_mode", "zeros")
    if padding != GRIDSAMPLE_PADDING:
        found.append(Offence(padding, "padding_mode"))
    x = node.input(0)
    if x is not None and x.rank is not None and x.rank != GRIDSAMPLE_RANK:
        found.append(Offence(x.rank, "input rank"))
    return found
