#!/usr/bin/env python3
"""The error referred to the outputs on probe models, against a brute force on ONNX Runtime's QDQ path.

    .venv/bin/python scripts/accuracy/probe_referred.py [OUT_DIR] [--chip rk3588]

Per probe (tests/referred_probes.py): the QDQ path's diagnosis (isolated SNR, referred SNR, its
ranking) and, per node ONNX Runtime quantises, the output SNR with that node alone quantised and
with it alone kept in float (scripts/accuracy/brute_force.py's quantised_snr). Prints one table per
probe; writes the models to OUT_DIR (default a temporary folder) for rknn-toolkit2's brute force.
"""
from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "accuracy"))

from tests import referred_probes  # noqa: E402
from brute_force import quantised_snr, run  # noqa: E402

from edgedeploy.accuracy import diagnosis, qdq, referred  # noqa: E402


def probe(name: str, path: Path, calib: list[dict], evaluation: list[dict]) -> dict:
    import onnx

    model = onnx.load(str(path))
    output = model.graph.output[0].name
    records, _ = qdq.diagnose_records(path, calib, evaluation)
    found = diagnosis.diagnose_path({"path": "qdq"}, records, [output], len(calib), graph_inputs=["x"],
                                    refer=lambda r: referred.refer_to_outputs(r, model, evaluation, calib))
    reference = run(path, evaluation, output)
    records_by = {r["node"]: r for r in records}
    from edgedeploy.accuracy import localise

    first = records_by.get((found["first_sharp_drop"] or {}).get("node"))
    before = [r["node"] for r in localise.ranked(first, [records_by[w["node"]] for w in found["worst_isolated"]])]
    rows = []
    for node in found["nodes"]:
        if node.get("precision") != "int8":
            continue
        alone = quantised_snr(path, calib, evaluation, reference, output, nodes_to_quantize=[node["node"]])
        kept = quantised_snr(path, calib, evaluation, reference, output, nodes_to_exclude=[node["node"]])
        rows.append({"node": node["node"], "isolated": node["isolated"]["snr_db"] if node.get("isolated") else None,
                     "referred": (node.get("referred") or {}).get("snr_db"), "drop": node.get("drop_db"), "alone": alone, "kept": kept})
    every = quantised_snr(path, calib, evaluation, reference, output)
    alone_rank = [r["node"] for r in sorted(rows, key=lambda r: r["alone"])]
    kept_rank = [r["node"] for r in sorted(rows, key=lambda r: -r["kept"])]
    print(f"\n{name}: every node int8 {every:.1f} dB; first sharp fall {(found['first_sharp_drop'] or {}).get('node')}; "
          f"worst isolated {[w['node'] for w in found['worst_isolated']]}; ranked {found['ranked'][:4]}")
    print(f"{'node':16s} {'isolated':>9s} {'referred':>9s} {'alone':>7s} {'rank':>4s} {'kept':>7s} {'rank':>4s}")
    for r in rows:
        iso = "-" if r["isolated"] is None else f"{float(r['isolated']):.1f}"
        ref = "-" if r["referred"] is None else f"{float(r['referred']):.1f}"
        print(f"{r['node']:16s} {iso:>9s} {ref:>9s} {r['alone']:7.1f} {alone_rank.index(r['node']) + 1:4d} {r['kept']:7.1f} {kept_rank.index(r['node']) + 1:4d}")
    # The same records as a path without isolated tensors or ranges sees them (rknn-toolkit2's): fake-quantised.
    import copy

    bare = [{k: v for k, v in r.items() if k not in ("isolated_values", "referred", "referred_injected")} for r in copy.deepcopy(records)]
    for r in bare:
        (r.get("stats") or {}).pop("step", None)
    fake = diagnosis.diagnose_path({"path": "fake"}, bare, [output], len(calib), graph_inputs=list(evaluation[0]),
                                   refer=lambda r: referred.refer_to_outputs(r, model, evaluation, calib))
    fake_snr = {n["node"]: (n.get("referred") or {}).get("snr_db") for n in fake["nodes"]}
    print("referred, fake-quantised inputs and output over calibration min/max: " + ", ".join(
        f"{r['node']} {float(fake_snr[r['node']]):.1f}" for r in rows if fake_snr.get(r["node"]) is not None))
    for label, ranking in (("without referred figures", before), ("with them", found["ranked"]), ("with fake-quantised ones", fake["ranked"])):
        top = ranking[0]
        where = (f"brute-force rank alone {alone_rank.index(top) + 1}, kept float {kept_rank.index(top) + 1}" if top in alone_rank
                 else "not quantised by ONNX Runtime (no brute-force figure)")
        print(f"diagnosis top {label}: {top}: {where}")
    return {"rows": rows, "ranked": found["ranked"], "before": before, "every": every}


def on_toolchain(name: str, out: Path, chip: str) -> None:
    """The same probe brute-forced on a chip's own simulation (brute_force.on_chip: RKNN's hybrid
    quantisation, one node kept in float16 or alone int8), against the diagnosis of that path."""
    from brute_force import on_chip

    found = on_chip(out / f"{name}.onnx", out / f"{name}.calib.npz", out / f"{name}.eval.npz", chip, None, None)
    print(f"\n{name} on {chip} ({found['toolchain']}): every node int8 {found['snr_every_node_db']:.1f} dB")
    print(f"{'node':16s} {'alone':>7s} {'kept':>7s}")
    for n in found["nodes"]:
        print(f"{n['node']:16s} {n['snr_this_alone_db']:7.1f} {n['snr_all_but_this_db']:7.1f}")
    print(f"diagnosis top {found['diagnosis_top']}: brute-force rank alone {found['diagnosis_top_rank_alone']}, kept {found['diagnosis_top_rank_by_gain']}; "
          f"ranking {found['diagnosis_ranking'][:4]}; without referred figures {found['diagnosis_ranking_without_referred'][:4]}")


def main() -> int:
    logging.getLogger().setLevel(logging.ERROR)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else Path(tempfile.mkdtemp(prefix="probe-referred-"))
    out.mkdir(parents=True, exist_ok=True)
    calib, evaluation = referred_probes.tones(64, 1, spikes=True), referred_probes.tones(32, 2)
    for name, make, inputs in (("spectrum", referred_probes.spectrum, ["x"]), ("attenuated", referred_probes.attenuated, ["x", "aux"])):
        make(out / f"{name}.onnx")
        np.savez(out / f"{name}.calib.npz", **{k: np.concatenate([f[k] for f in calib]) for k in inputs})
        np.savez(out / f"{name}.eval.npz", **{k: np.concatenate([f[k] for f in evaluation]) for k in inputs}, labels=np.zeros(len(evaluation), np.int64))
        probe(name, out / f"{name}.onnx", referred_probes.only(calib, inputs), referred_probes.only(evaluation, inputs))
    if "--chip" in sys.argv:
        for name in ("spectrum", "attenuated"):
            on_toolchain(name, out, sys.argv[sys.argv.index("--chip") + 1])
    print(f"\nmodels and data in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
