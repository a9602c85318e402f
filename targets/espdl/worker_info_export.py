"""esp-ppq's `.info` file without the weights' values: what the ESP-DL workers export.

Runs inside the `espdl` toolchain environment, loaded by path by worker_build.py and
worker_verdict.py (`ctx.load_module`); like them it must not import edgedeploy, and it imports
esp-ppq only when called.

esp-ppq 1.3.12's exporter writes a text dump beside the `.espdl`, the `.info` file: the graph with
every layer's quant_type (S8, S16, F32), which is all edgedeploy reads from it
(worker_verdict.parse_info), then the value info, the embedded test values, and every
initializer's values printed in full by numpy (`printoptions(threshold=inf)`, one repr per
tensor). Printing a tensor that way takes time that grows faster than its size, and on a real model
it is most of the conversion: measured 2026-12-02 on this 2-core machine, ResNet-18 of the corpus
(11.7 M weights, 96x96 input) spent about 220 s of a 230 s esp-ppq run printing its weights, after
6 s of quantisation. The `.espdl` itself is written from the model, not from this text, so it does
not change; the `.info` keeps everything but the weights' values, which the `.espdl` holds.
"""

import contextlib


@contextlib.contextmanager
def info_without_weight_values():
    """While inside, esp-ppq's exporter writes the `.info` file without the initializers' values.

    The exporter calls `esp_ppq.parser.espdl.helper.printable_graph(model,
    print_initializer_value=True, print_value_info=True, print_test_value=True)`; for the time
    of the block that function is one that passes every argument on except that one, which it
    sets to False (subgraphs are printed through the same module attribute, so they too).
    """
    from esp_ppq.parser.espdl import helper

    original = helper.printable_graph

    def printable_graph(model, prefix="", print_initializer_value=False, print_value_info=False, print_test_value=False):
        return original(model, prefix, print_initializer_value=False, print_value_info=print_value_info, print_test_value=print_test_value)

    helper.printable_graph = printable_graph
    try:
        yield
    finally:
        helper.printable_graph = original
