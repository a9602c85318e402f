"""The grouped Convs ESP-DL cannot run, written as block-diagonal group-1 Convs before esp-ppq
(targets/espdl/grouped_conv.py): exact in float, and what `edgedeploy build` hands esp-ppq."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from edgedeploy.datasets import Dataset
from edgedeploy.model import load_model
from edgedeploy.targets import find_chip
from edgedeploy.targets.espdl import convert as espdl_convert
from edgedeploy.targets.espdl.grouped_conv import block_diagonal_cost, rewrite_grouped_convs
from tests.forms_models import GROUPED_CONV_FORMS, grouped_conv, zoo_shuffle_unit
from tests.helpers import save


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def groups(model: onnx.ModelProto) -> dict[str, int]:
    return {n.name: next((a.i for a in n.attribute if a.name == "group"), 1) for n in model.graph.node if n.op_type == "Conv"}


@pytest.mark.parametrize("name", list(GROUPED_CONV_FORMS))
def test_the_rewrite_is_exact_in_float_and_touches_only_what_esp_dl_cannot_run(name):
    """ONNX Runtime on the form as written and as rewritten, on random inputs: the same outputs
    (to float rounding); group 1 and plain depthwise Convs are left as they are."""
    cin, cout, group, kernel, *_rest, rank = GROUPED_CONV_FORMS[name]
    original = grouped_conv(*GROUPED_CONV_FORMS[name])
    rewritten = grouped_conv(*GROUPED_CONV_FORMS[name])
    done = rewrite_grouped_convs(rewritten)
    onnx.checker.check_model(rewritten)
    as_written = group == 1 or group == cin == cout
    assert [d["node"] for d in done] == ([] if as_written else ["conv_grouped"])
    assert groups(rewritten)["conv_grouped"] == (group if as_written else 1)
    x = np.random.default_rng(7).standard_normal([1, cin] + [10] * (rank - 2)).astype(np.float32)
    expected, got = run(original, x), run(rewritten, x)
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 1e-5 * max(1.0, np.abs(expected).max())
    if not as_written:
        weights = cout * (cin // group) * kernel ** (rank - 2)
        assert done[0]["macs_factor"] == group and done[0]["added_weights"] == weights * (group - 1)
        # Unread, the grouped weights are gone (the copy esp-ppq reads carries one weight tensor).
        assert "w1" not in {i.name for i in rewritten.graph.initializer}


def test_constant_of_shape_weights_of_the_zoo_form_are_computed_and_rewritten():
    """Form f's weights come from ConstantOfShape (IR 3, initializers also graph inputs): the
    rewrite computes them, writes the block-diagonal ones as an initializer listed as an input too."""
    original, rewritten = zoo_shuffle_unit(4), zoo_shuffle_unit(4)
    done = rewrite_grouped_convs(rewritten)
    assert [d["node"] for d in done] == ["n1", "n11"] and all(d["group"] == 4 for d in done)
    assert groups(rewritten) == {"n1": 1, "n8": 8, "n11": 1, "n14": 1}
    initialised = {i.name for i in rewritten.graph.initializer}
    assert initialised <= {i.name for i in rewritten.graph.input}
    x = np.random.default_rng(3).standard_normal([1, 8, 8, 8]).astype(np.float32)
    assert np.abs(run(original, x) - run(rewritten, x)).max() <= 1e-5


def test_cost_is_the_groups_factor():
    assert block_diagonal_cost(4, (56, 6, 1, 1)) == {"macs_factor": 4, "weights_before": 336, "weights_after": 1344, "added_weights": 1008}


def test_builds_conversion_request_carries_the_rewritten_model_and_reports_each_node(tmp_path):
    """build_request saves the copy esp-ppq reads: its grouped Conv is a group-1 Conv of the same
    name, and the workaround (in the build report) names the node with its cost."""
    path = save(grouped_conv(*GROUPED_CONV_FORMS["g4_1x1_24to56"]), tmp_path / "m.onnx")
    model = load_model(path, require_static=True)
    _, chip = find_chip("esp32s3")
    calibration = Dataset({"x": np.zeros((4, 24, 10, 10), np.float32)}, None, "zeros")
    echoed: list[str] = []
    work = tmp_path / "work"
    ctx = SimpleNamespace(
        precision="int8", model=model, chip=chip, workdir=tmp_path / "out", echo=echoed.append,
        options=SimpleNamespace(int16_layers=None, calib_method=None, equalization=False, bias_correction=False),
        data=SimpleNamespace(calibration=calibration, evaluation=None, batchable=True),
        work=lambda name: (work / name).mkdir(parents=True, exist_ok=True) or work / name,
    )
    request = espdl_convert.build_request(ctx)
    handed = onnx.load(request.payload["model"])
    assert groups(handed) == {"conv_plain": 1, "conv_grouped": 1}
    assert groups(model.proto)["conv_grouped"] == 4  # the user's model is not changed
    (record,) = [w for w in request.keep["workarounds"] if "block-diagonal" in w["name"]]
    assert record["nodes"] == ["conv_grouped"]
    assert record["per_node"] == ["conv_grouped: group-4 Conv (24 -> 56 channels) as a group-1 Conv: 4x its MACs, +1008 weights (+1008 bytes at int8)"]
    assert any("conv_grouped: group-4 Conv" in line for line in echoed)  # announced on the console too
    x = np.random.default_rng(1).standard_normal((1, 24, 10, 10)).astype(np.float32)
    assert np.abs(run(handed, x) - run(model.proto, x)).max() <= 1e-5


def test_the_console_names_the_first_rewrites_and_counts_the_rest():
    echoed: list[str] = []
    lines = [f"n{i}: group-4 Conv" for i in range(espdl_convert.ANNOUNCED_REWRITES + 2)]
    espdl_convert._announce_rewrites(SimpleNamespace(echo=echoed.append), lines)
    assert echoed[:-1] == [f"convert: {line}" for line in lines[: espdl_convert.ANNOUNCED_REWRITES]]
    assert "... and 2 more grouped Conv(s)" in echoed[-1] and "report.json" in echoed[-1]
