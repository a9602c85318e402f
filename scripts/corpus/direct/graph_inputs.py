"""What the direct scripts beside this file share: a model's real inputs, as the toolchains'
examples read them (graph inputs that are not initializers), without loading external weights."""


def graph_inputs(model_path):
    """The model's graph inputs (onnx ValueInfoProto) that are not initializers, in graph order."""
    import onnx

    graph = onnx.load(model_path, load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in inits]


def feed_of(array, rank, k):
    """Sample k of a calibration array, shaped as the model takes it: an array of one axis more than
    the input holds whole samples stacked (edgedeploy.datasets: an input whose leading axis is not a
    batch axis, such as a recurrent state [layers, batch, hidden]), any other is batch-first."""
    return array[k] if array.ndim == rank + 1 else array[k : k + 1]
