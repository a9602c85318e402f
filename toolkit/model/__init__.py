"""Model intake: loading, validation, shape pinning and the figures `inspect` reports."""

from edgedeploy.model.intake import LoadedModel, input_shapes_from, load_model, parse_input_shape_options
from edgedeploy.model.shapes import InputShapes, numel, show_shape
from edgedeploy.model.stats import named_copy, node_names

__all__ = ["LoadedModel", "load_model", "parse_input_shape_options", "input_shapes_from", "InputShapes", "numel", "show_shape", "named_copy", "node_names"]
