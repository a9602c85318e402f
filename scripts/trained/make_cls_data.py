"""ppocr_cls_mobile_v2's calibration and evaluation files alone, where make_set.py's cannot be made
(it needs the whole set: its random draws for which lines are turned follow those of the models
trained here). Runs in the corpus environment:

    ~/.cache/edgedeploy/envs/corpus/bin/python scripts/trained/make_cls_data.py WHEELS_DIR OUT_DIR

The lines are the set's own (prepare_data.py's draws up to its text lines, checked against
ppocr_rec_v4.calib.npz when that file is there); which half is turned 180 degrees is drawn here
with SEED, so these files are not the manifest's (their sha256 differ) and the float top-1 is
printed for them. Writes OUT_DIR/ppocr_cls_mobile_v2.{onnx,calib.npz,eval.npz} (not the set's folder,
whose files other runs take for the manifest's).
"""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 26


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    prepare, make_set = _load("prepare_data"), _load("make_set")
    rng = np.random.default_rng(prepare.SEED)
    prepare.mnist(rng), prepare.glyphs(rng)  # the draws before the lines, as prepare_data.main makes them
    lines = prepare.lines(rng)["line_x"]
    rec = make_set.HOME / "ppocr_rec_v4.calib.npz"
    if rec.exists():
        with np.load(rec) as data:
            same = np.array_equal(data["x"], make_set.ocr_normalise(lines[: len(data["x"])], 320))
        print(f"lines equal to the set's (ppocr_rec_v4.calib.npz): {same}")
        if not same:
            sys.exit("make_cls_data: the rendered lines differ from the set's; not written")
    turn = np.random.default_rng(SEED).permutation(len(lines)) % 2  # half the lines upside down
    x = make_set.ocr_normalise(np.where(turn[:, None, None] == 1, lines[:, ::-1, ::-1], lines), 192)
    calib_idx, eval_idx = np.arange(0, make_set.CALIB_COUNT), np.arange(200, 400)
    model = next(Path(sys.argv[1]).rglob("rapidocr_onnxruntime/models")) / "ch_ppocr_mobile_v2.0_cls_infer.onnx"
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, out / "ppocr_cls_mobile_v2.onnx")
    np.savez(out / "ppocr_cls_mobile_v2.calib.npz", x=x[calib_idx])
    np.savez(out / "ppocr_cls_mobile_v2.eval.npz", x=x[eval_idx], labels=turn[eval_idx])
    print(f"ppocr_cls_mobile_v2: float top-1 {make_set.top1_x(model, x[eval_idx], turn[eval_idx]):.4f} on 200 held-out lines (seed {SEED})")


if __name__ == "__main__":
    main()
