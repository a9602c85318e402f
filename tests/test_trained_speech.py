"""The trained set's speech (scripts/trained/prepare_data.py) without the espeak-ng binary: the
engine of the espeakng-loader wheel, each word in a fresh process as the binary speaks it, and one
sentence when neither is there. make_set.py's --only remakes only a model that draws nothing from
its seeded stream."""
from __future__ import annotations

import importlib.util
import shutil
import sys
import wave
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "trained" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_the_binary_or_the_wheel_one_sentence(tmp_path, monkeypatch):
    prepare = load("prepare_data")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # the import fails
    with pytest.raises(SystemExit) as stop:
        prepare.speak("seven", "en", 150, 50, tmp_path)
    assert "neither the espeak-ng binary nor the espeakng-loader wheel" in str(stop.value)


def test_the_wheel_speaks_a_16_bit_wav_the_same_each_time(tmp_path, monkeypatch):
    pytest.importorskip("espeakng_loader")  # not in the test environment: CI installs nothing
    prepare = load("prepare_data")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    first = prepare.speak("three", "en-us+f3", 210, 70, tmp_path)  # f3 breathes: the engine's noise generator
    with wave.open(str(tmp_path / "w.wav")) as handle:
        assert (handle.getsampwidth(), handle.getnchannels(), handle.getframerate()) == (2, 1, 22050)
    second = prepare.speak("three", "en-us+f3", 210, 70, tmp_path)
    assert len(first) > 0.3 * prepare.SAMPLE_RATE and (first == second).all()
    with pytest.raises(SystemExit) as stop:
        prepare.speak("three", "xx-no-such-voice", 150, 50, tmp_path)
    assert "no-such-voice" in str(stop.value)


def test_only_a_model_outside_the_seeded_stream_is_remade_alone(monkeypatch, tmp_path):
    make_set = load("make_set")
    monkeypatch.setattr(sys, "argv", ["make_set.py", str(tmp_path / "data.npz"), str(tmp_path), str(tmp_path), "--only", "ppocr_rec_v4"])
    (tmp_path / "data.npz").write_bytes(b"")
    monkeypatch.setattr(make_set.np, "load", lambda path: {})
    monkeypatch.setattr(make_set, "HOME", tmp_path / "trained")
    with pytest.raises(SystemExit) as stop:
        make_set.main()
    assert "--only takes silero_vad_16k" in str(stop.value) and "ppocr_rec_v4" in str(stop.value)
