"""What the direct scripts beside this file share: a model's real inputs, as the toolchains'
examples read them (graph inputs that are not initializers), without loading external weights."""


def graph_inputs(model_path):
    """The model's graph inputs (onnx ValueInfoProto) that are not initializers, in graph order."""
    import onnx

    graph = onnx.load(model_path, load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in inits]
