"""Compute the cost model's features of every published model on every chip, once, and commit them.

    .venv/bin/python scripts/estimate/features.py [--manifest toolkit/estimate/data/models_manifest.json]
        [--models ~/.cache/edgedeploy/estimate-models] [--only KEY... | --stale]

Reads the models manifest (model_key -> ONNX file and input shape, written by
scripts/estimate/models.py, which rebuilds each published model from its public definition),
audits every model on every chip of data/priors.json, and writes
toolkit/estimate/data/features.json: per model its sha256 and input shape, per chip the FEATURES
of edgedeploy.estimate.features plus the audit's fallback count. The fit (scripts/estimate/fit.py)
and CI's leave-one-out test read that file, so neither needs the models.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "toolkit" / "estimate" / "data"


def models_dir() -> Path:
    home = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
    return home / "estimate-models"


def model_entries(manifest: dict) -> dict[str, dict]:
    """model_key -> its entry, whether the manifest holds {"models": {...}}, {"models": [...]} or the dict itself."""
    models = manifest.get("models", manifest)
    if isinstance(models, list):
        return {m["model_key"]: m for m in models}
    return {k: v for k, v in models.items() if isinstance(v, dict)}


def without_unused_domains(path: Path, scratch: Path) -> Path:
    """The model itself, or a copy without the opset imports of domains no node uses: an export
    pass that lists onnxruntime's and training's domains makes intake refuse a model that uses none."""
    import onnx

    proto = onnx.load(str(path), load_external_data=False)
    used = {node.domain or "" for node in proto.graph.node} | {"", "ai.onnx"}
    if all((imp.domain or "") in used for imp in proto.opset_import):
        return path
    proto = onnx.load(str(path))
    kept = [imp for imp in proto.opset_import if (imp.domain or "") in used]
    del proto.opset_import[:]
    proto.opset_import.extend(kept)
    copy = scratch / path.name
    onnx.save(proto, str(copy))
    return copy


def chip_features_of(path: Path, input_shape, chips: list[str]) -> dict:
    from edgedeploy.audit.engine import ChipIndependent, audit_model
    from edgedeploy.audit.rules import Placement
    from edgedeploy.estimate import chip_features, node_costs
    from edgedeploy.model import load_model
    from edgedeploy.model.intake import with_batch_pinned
    from edgedeploy.targets import find_chip

    shapes = {}
    if input_shape:
        shapes = {"": tuple(int(d) for d in input_shape)} if isinstance(input_shape, list) else {k: tuple(v) for k, v in input_shape.items()}
    model = load_model(path, shapes)
    model = with_batch_pinned(model) or model
    shared = ChipIndependent(model)
    costs = node_costs(model)
    out = {"sha256": model.sha256, "nodes": len(model.graph.node), "chips": {}}
    for chip_id in chips:
        target, chip = find_chip(chip_id)
        precision = chip.precisions[0]
        audit = audit_model(model, target.rule_set(chip.id, precision), precision, shared=shared)
        features = {k: round(v, 9) for k, v in chip_features(costs, audit).items()}
        counts = audit.counts()
        features["fallback_nodes"] = counts[Placement.FALLBACK]
        features["unsupported_nodes"] = counts[Placement.UNSUPPORTED]
        out["chips"][chip_id] = features
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, default=DATA / "models_manifest.json")
    parser.add_argument("--models", type=Path, default=None, help="folder of the ONNX files (default: $EDGEDEPLOY_HOME/estimate-models)")
    parser.add_argument("--out", type=Path, default=DATA / "features.json")
    parser.add_argument("--only", nargs="*", help="recompute only these model keys (the others are kept)")
    parser.add_argument("--stale", action="store_true", help="recompute only the models new to the manifest or whose sha256 there changed (the others are kept)")
    args = parser.parse_args(argv)
    folder = args.models or models_dir()
    entries = model_entries(json.loads(args.manifest.read_text()))
    chips = sorted(json.loads((DATA / "priors.json").read_text())["chips"])
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    done = dict(old.get("models", {})) if args.only or args.stale else {}
    if args.stale:
        args.only = [k for k, e in entries.items() if k not in done or (e.get("sha256") and e["sha256"] != done[k].get("sha256"))]
        for gone in set(done) - set(entries):
            del done[gone]
    for key, entry in sorted(entries.items()):
        if args.only and key not in args.only:
            continue
        path = Path(entry.get("file") or f"{key}.onnx")
        path = path if path.is_absolute() else folder / path
        if not path.exists():
            print(f"{key}: {path} is missing; skipped", file=sys.stderr)
            continue
        started = time.monotonic()
        try:
            shapes = entry.get("inputs") or entry.get("input_shape")
            with tempfile.TemporaryDirectory(prefix="edgedeploy-features-") as scratch:
                found = chip_features_of(without_unused_domains(path, Path(scratch)), shapes, chips)
            found["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()  # of the file the manifest names
        except Exception as exc:  # noqa: BLE001 - one bad model must not stop the rest; it is reported
            print(f"{key}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        found["file"] = path.name
        found["input_shape"] = shapes
        done[key] = found
        print(f"{key}: {found['nodes']} nodes, {len(chips)} chips, {time.monotonic() - started:.1f} s", file=sys.stderr)
    from edgedeploy.estimate.features import FEATURES

    doc = {"schema": "edgedeploy.estimate-features/1", "features": list(FEATURES), "models": dict(sorted(done.items()))}
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.out}: {len(done)} models", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
