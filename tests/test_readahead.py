"""edgedeploy.readahead: the model file read on a thread while the program imports ONNX. The
intake takes those bytes only when they are the file's as it checks it, so nothing a user sees
depends on the read ahead."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from edgedeploy import readahead
from edgedeploy.model import load_model

CORPUS = Path(__file__).parent / "fixtures" / "corpus"


def test_the_bytes_read_ahead_are_the_file_s_and_are_taken_once(tmp_path):
    path = CORPUS / "mnist_box_and_class.onnx"
    readahead.start(path)
    assert readahead.take(path) == path.read_bytes()
    assert readahead.take(path) is None  # taken: the next load reads the file itself
    assert readahead.take(CORPUS / "gru_har.onnx") is None  # never started


def test_nothing_is_read_ahead_for_a_missing_file_or_a_folder(tmp_path):
    readahead.start(tmp_path / "missing.onnx")
    readahead.start(tmp_path)
    assert readahead.take(tmp_path / "missing.onnx") is None and readahead.take(tmp_path) is None


def test_a_file_replaced_after_the_read_ahead_is_read_again(tmp_path):
    """The intake compares the bytes read ahead with the file's size as it checks it: a model
    written over in between is loaded as it is now, not as it was."""
    path = tmp_path / "model.onnx"
    path.write_bytes((CORPUS / "mnist_box_and_class.onnx").read_bytes())
    readahead.start(path)
    readahead._reads[readahead._key(path)].join()  # the read is over before the file changes
    path.write_bytes((CORPUS / "gru_har.onnx").read_bytes())
    loaded = load_model(path)
    assert loaded.sha256 == load_model(CORPUS / "gru_har.onnx").sha256


def test_a_model_read_ahead_loads_as_one_read_here():
    path = CORPUS / "lstm_stateful.onnx"
    readahead.start(path)
    ahead = load_model(path)
    assert readahead.take(path) is None  # the intake took it
    here = load_model(path)
    assert ahead.sha256 == here.sha256 and ahead.proto == here.proto


def test_a_file_changed_in_place_to_the_same_size_is_read_again(tmp_path):
    """Same size, new content and time of change: the stat taken as the file was opened differs."""
    import os

    path = tmp_path / "model.onnx"
    original = (CORPUS / "mnist_box_and_class.onnx").read_bytes()
    path.write_bytes(original)
    readahead.start(path)
    readahead._reads[readahead._key(path)].join()
    with open(path, "r+b") as f:
        f.write(original[:8])  # the same bytes, but the file is written: its time of change moves
    os.utime(path, ns=(1, 1))
    assert readahead.take(path, path.stat()) is None


def test_the_audit_command_imports_no_onnx_before_it_runs():
    """What makes the read ahead worth it: the command's module, its options included, imports
    neither ONNX nor numpy; they are imported once the command runs, beside the read."""
    code = "import sys\nimport edgedeploy.cli.audit_cmd\nprint(sorted(m for m in ('onnx', 'numpy') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
