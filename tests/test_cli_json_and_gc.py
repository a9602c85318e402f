"""The JSON every command prints (edgedeploy.cli.output.to_json) and the garbage-collector setting
of the program (edgedeploy.cli.tune_garbage_collector): what they change for speed must not change
what a user reads."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgedeploy.cli import GC_YOUNG_THRESHOLD, main
from edgedeploy.cli.output import JSON_INDENT_LEVELS, to_json

DOCUMENTS = [
    {"a": [1, 2, {"b": (1, 2), "c": {"d": [{"e": np.float32(1.5)}]}}], 1: True, None: [], "x": {}, "s": {3}, "p": Path("/x"), "n": np.int64(7)},
    [],
    {},
    3,
    "t\u00e9xt \"quoted\"\n",
    [[[[[1, [2]]]]]],
    {"nan": float("nan"), "inf": float("inf"), 2.5: "float key", False: "bool key"},
    {"array": np.arange(6).reshape(2, 3)},
]


def _reference(data):
    """What json.dumps writes with the CLI's defaults, read back."""
    default = lambda v: v.tolist() if hasattr(v, "tolist") else list(v) if isinstance(v, (set, frozenset, tuple)) else str(v)  # noqa: E731
    return json.loads(json.dumps(data, default=default))


@pytest.mark.parametrize("data", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_the_json_holds_the_same_values_as_json_dumps(data):
    text = to_json(data)
    assert text.endswith("\n")
    assert json.dumps(json.loads(text), sort_keys=True) == json.dumps(_reference(data), sort_keys=True)


def test_the_json_is_indented_down_to_its_levels_then_one_line_per_value():
    data = {"audits": [{"chip": "rk3588", "nodes": [{"node": "conv1", "violations": [{"rule": "r", "value": [1, 2]}]}]}]}
    lines = to_json(data).splitlines()
    assert lines[0] == "{" and lines[1] == '  "audits": ['
    deepest = [line for line in lines if '"node": "conv1"' in line]
    # A value at level JSON_INDENT_LEVELS (a node of a chip's audit) is one line, indented by its depth.
    assert JSON_INDENT_LEVELS == 4
    assert deepest == ['        {"node": "conv1", "violations": [{"rule": "r", "value": [1, 2]}]}']


def test_the_program_tunes_the_collector_but_a_caller_s_process_keeps_its_own(capsys):
    before = gc.get_threshold()
    with pytest.raises(SystemExit):
        main(["--version"])
    assert gc.get_threshold() == before
    code = "import gc, sys; from edgedeploy.cli import main; sys.argv = ['edgedeploy', '--version']\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint(gc.get_threshold()[0])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stdout.split()[-1]) == GC_YOUNG_THRESHOLD


def test_after_the_audit_the_program_freezes_what_it_made_but_a_caller_s_collector_sees_all(capsys):
    """The audit pauses the collector; the program then freezes the objects made meanwhile (no
    scan of them on its way out), while a caller of main(argv) gets its collector back as it was."""
    frozen = gc.get_freeze_count()
    with pytest.raises(SystemExit) as ended:
        main(["audit", "--target", "rk3588", "--format", "json"])  # the bundled sample model
    assert ended.value.code in (0, None)
    assert json.loads(capsys.readouterr().out)["audits"]
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    # Read at exit (an atexit handler): the program may end inside main() once the audit is
    # written (edgedeploy.cli.skip_teardown), so nothing after main() would run.
    code = (
        "import atexit, gc, sys; from edgedeploy.cli import main; sys.argv = ['edgedeploy', {args}]\n"
        "atexit.register(lambda: print(gc.isenabled(), gc.get_freeze_count(), file=sys.stderr))\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    counts = {}
    for name, args in (("version", "'--version'"), ("audit", "'audit', '--target', 'rk3588', '--format', 'json'")):
        done = subprocess.run([sys.executable, "-c", code.format(args=args)], capture_output=True, text=True, check=True)
        enabled, count = done.stderr.split()[-2:]
        assert enabled == "True"
        counts[name] = int(count)
    # The audit's own objects (node views, placements, the report) join the frozen imports.
    assert counts["audit"] > counts["version"] + 1000
