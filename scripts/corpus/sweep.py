#!/usr/bin/env python3
"""Every corpus model through `edgedeploy build` for every chip that converts here, as a user would.

    python3 scripts/corpus/sweep.py [--only MODELS] [--chips CHIPS] [--jobs 1] [--timeout-s 5400]
                                    [--edgedeploy PATH] [--reuse-other-commits] [--rerun CASES]

One case = one model on one chip: `edgedeploy build MODEL --target CHIP --calib CALIB --eval EVAL
-o out`, the model's own calibration and evaluation data from the corpus, every other option at
its default, run as a subprocess (its own process group, killed on the case's time-out) from the
case's folder. Resumable: each case's outcome is cached in

    $EDGEDEPLOY_HOME/corpus-sweep/<model>/<chip>/<commit>-<key>/result.json

where the key hashes the model's sha256, the chip, edgedeploy's version and commit (with a
marker and a hash of the diff when the tree is dirty) and the toolchain environment's package
versions; a re-run skips every case whose key has a result. `--reuse-other-commits` also takes a
case's newest cached result built at another commit (to re-render, or to re-run only the cases a
fix affects: `--rerun model/chip,model/*,failed`). What the doc shows always names the commit
each case was built at.

From each build's report.json (the artifact is pruned to its JSON files and logs afterwards,
sizes recorded first): whether it converted, the failure's sentence (the last `error:` line the
CLI printed), the workarounds edgedeploy applied, the toolchain's own placement (on/off the
accelerator, from toolchain_verdict.json) and the audit's agreement with it, accuracy before ->
after (the task metric on its named output; fidelity per output; a detection output's boxes and
scores apart), build time, artifact size, Vela's estimates. Written to docs/corpus.json after
every case; `render_docs.py` turns it into the tables of docs/corpus.md.

Cases run smallest model first, so an interrupted sweep has covered as many models as it could.
Standard library only; run it with any Python 3.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
MANIFEST = ROOT / "tests" / "fixtures" / "corpus" / "corpus.json"
RESULTS = ROOT / "docs" / "corpus.json"
CACHE = HOME / "corpus-sweep"
CHIPS = ("esp32s3", "esp32p4", "rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106", "imx93", "imx8mp")
ENV_OF = {"esp32s3": "espdl", "esp32p4": "espdl", "imx93": "eiq", "imx8mp": "eiq"}
ENV_PACKAGES = {"espdl": ["esp-ppq"], "rknn": ["rknn-toolkit2"], "eiq": ["onnx2tf", "ethos-u-vela", "tensorflow-cpu"]}
# What the pruned artifact keeps: the reports and logs (the compiled files are large and can be rebuilt).
KEEP = re.compile(r"\.(json|log|txt|csv)$")
ERROR_LINE = re.compile(r"^error: (.*)$")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()  # corpus models are at most ~120 MB


def with_file_sha256(model: dict) -> dict:
    """The manifest entry with the sha256 of the model file actually on disk.

    A model regenerated on another CPU can differ from the manifest in its last bits (torch's
    kernels for the BatchNorm statistics round differently per instruction set), so a case
    names the file it built; `model_sha256_manifest` says when that is not the manifest's.
    """
    actual = file_sha256(file_of(model["model"]))
    if actual == model["model"]["sha256"]:
        return model
    print(f"sweep: {model['name']}: the file here has sha256 {actual[:12]}, the manifest {model['model']['sha256'][:12]} (regenerated on another machine); cases record the file's", file=sys.stderr)
    return {**model, "model": {**model["model"], "sha256": actual, "manifest_sha256": model["model"]["sha256"]}}


def env_of(chip: str) -> str:
    return ENV_OF.get(chip, "rknn")


def file_of(item: dict) -> Path:
    """Where a manifest's file lies: committed fixtures, or the corpus or trained set made here."""
    base = {"fixtures": ROOT / "tests" / "fixtures" / "corpus", "trained": HOME / "trained"}.get(item["where"], HOME / "corpus")
    return base / item["file"]


def env_version(env: str) -> str:
    python = HOME / "envs" / env / "bin" / "python"
    code = "import importlib.metadata as m; print(', '.join(p + ' ' + m.version(p) for p in %r))" % ENV_PACKAGES[env]
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def edgedeploy_identity(cli: Path) -> dict:
    """The version and commit of the edgedeploy that `cli` runs (its source tree's git state)."""
    python = cli.parent / "python"
    code = "import edgedeploy, pathlib; print(edgedeploy.__version__); print(pathlib.Path(edgedeploy.__file__).resolve().parent)"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    version, package_dir = out[0].strip(), Path(out[1].strip())
    git = ["git", "-C", str(package_dir)]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    # Only the files edgedeploy is made of decide whether its tree is dirty (docs, tests and this script do not build anything).
    diff = subprocess.run(git + ["diff", "HEAD", "--", "toolkit", "targets", "templates", "firmware", "pyproject.toml", "setup.py"], capture_output=True, text=True, check=True).stdout
    ident = commit[:12] + (f"+dirty-{hashlib.sha256(diff.encode()).hexdigest()[:8]}" if diff else "")
    return {"version": version, "commit": commit, "ident": ident, "dirty": bool(diff), "source": str(package_dir.parent)}


class Sweep:
    def __init__(self, args, manifest: dict):
        self.args = args
        self.cli = args.edgedeploy.absolute()
        self.identity = edgedeploy_identity(self.cli)
        chips = [c for c in args.chips.split(",") if c]
        self.toolchains = {e: env_version(e) for e in sorted({env_of(c) for c in chips})}
        self.lock = threading.Lock()
        self.results: dict[str, dict] = {}
        if args.results.exists():
            for c in json.loads(args.results.read_text()).get("cases", []):
                self.results[c["case"]] = c
        self.order = {m["name"]: i for i, m in enumerate(manifest["models"])}

    # -- cache ---------------------------------------------------------------------------

    def key(self, model: dict, chip: str) -> str:
        text = f"{model['model']['sha256']} {chip} edgedeploy {self.identity['version']} {self.identity['ident']} {self.toolchains[env_of(chip)]}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def folder(self, model: dict, chip: str) -> Path:
        return CACHE / model["name"] / chip / f"{self.identity['ident']}-{self.key(model, chip)}"

    def cached(self, model: dict, chip: str) -> dict | None:
        """This commit's result, else (with --reuse-other-commits) the newest result of the same model, chip and toolchain."""
        own = self.folder(model, chip) / "result.json"
        if own.is_file():
            return json.loads(own.read_text())
        if not self.args.reuse_other_commits:
            return None
        best = None
        for path in (CACHE / model["name"] / chip).glob("*/result.json"):
            r = json.loads(path.read_text())
            if r.get("model_sha256") == model["model"]["sha256"] and r.get("toolchain") == self.toolchains[env_of(chip)] and r.get("edgedeploy", {}).get("version") == self.identity["version"]:
                if best is None or r["finished_at"] > best["finished_at"]:
                    best = r
        return best

    def save(self) -> None:
        with self.lock:
            data = {
                "about": "Each corpus model built by `edgedeploy build` for each chip, as a user would (scripts/corpus/sweep.py): "
                "the model's own calibration and evaluation data, default options. Per case: converted or not, the failure's "
                "sentence, workarounds applied, the toolchain's own placement and the audit's agreement with it, accuracy "
                "before -> after per output, build time, artifact size, Vela's estimate.",
                "edgedeploy": {k: self.identity[k] for k in ("version", "commit", "ident", "dirty")},
                "toolchains": self.toolchains,
                "timeout_s": self.args.timeout_s,
                "cases": sorted(self.results.values(), key=lambda c: (self.order.get(c["model"], 999), CHIPS.index(c["chip"]) if c["chip"] in CHIPS else 99)),
            }
            tmp = self.args.results.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1) + "\n")
            tmp.replace(self.args.results)

    # -- one case ------------------------------------------------------------------------

    def run_case(self, model: dict, chip: str) -> dict:
        folder = self.folder(model, chip)
        if folder.exists():
            shutil.rmtree(folder)  # a case cut short (no result.json): start it afresh
        folder.mkdir(parents=True)
        argv = [str(self.cli), "build", str(file_of(model["model"])), "--target", chip,
                "--calib", str(file_of(model["calib"])), "--eval", str(file_of(model["eval"])), "-o", "out",
                *model.get("build_options", [])]
        started = time.monotonic()
        timed_out = False
        with open(folder / "stdout.txt", "wb") as out, open(folder / "stderr.txt", "wb") as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=folder, start_new_session=True)
            try:
                rc = proc.wait(timeout=self.args.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGTERM)  # edgedeploy stops its workers on SIGTERM
                try:
                    rc = proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    rc = proc.wait()
        wall = round(time.monotonic() - started, 1)
        result = self.summarise(model, chip, folder, argv, rc, wall, timed_out)
        (folder / "result.json").write_text(json.dumps(result, indent=1) + "\n")
        return result

    def summarise(self, model: dict, chip: str, folder: Path, argv: list[str], rc: int, wall: float, timed_out: bool) -> dict:
        stderr = (folder / "stderr.txt").read_text(errors="replace")
        errors = [m.group(1) for line in stderr.splitlines() if (m := ERROR_LINE.match(line.strip()))]
        artifact = next((p for p in (folder / "out").glob(f"*/{chip}") if (p / "report.json").is_file()), None)
        failed_dir = next((folder / "out").glob(f"*/{chip}.failed"), None)
        result = {
            "case": f"{model['name']}/{chip}",
            "model": model["name"],
            "model_sha256": model["model"]["sha256"],
            **({"model_sha256_manifest": model["model"]["manifest_sha256"]} if "manifest_sha256" in model["model"] else {}),
            "chip": chip,
            "toolchain": self.toolchains[env_of(chip)],
            "edgedeploy": {k: self.identity[k] for k in ("version", "commit", "ident", "dirty")},
            "command": "edgedeploy " + " ".join(Path(a).name if i in (2, 6, 8) else a for i, a in enumerate(argv[1:], start=1)),
            "exit_code": rc,
            "wall_seconds": wall,
            "timed_out": timed_out,
            "converted": False,
            "cache": str(folder.relative_to(HOME)),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        if timed_out:
            result["failure"] = f"the sweep stopped the build after {self.args.timeout_s:.0f} s (not a verdict)"
        elif errors:
            result["failure"] = errors[-1]
        elif artifact is None:
            result["failure"] = f"edgedeploy exited {rc} without a report and without an error line" + (f" (last stderr line: {stderr.strip().splitlines()[-1][:300]})" if stderr.strip() else "")
        if rc == 70 or "Traceback (most recent call last)" in stderr:
            result["internal_error"] = True
        if artifact is not None:
            report = json.loads((artifact / "report.json").read_text())
            result.update(from_report(report, artifact))
            result["artifact_bytes"] = sum(p.stat().st_size for p in artifact.rglob("*") if p.is_file())
            prune(artifact)
        if failed_dir is not None:
            result["failed_folder_kept"] = True
            prune(failed_dir)
        return result

    # -- the sweep -----------------------------------------------------------------------

    def wanted(self, model: dict, chip: str) -> bool:
        """--rerun: cases to build again even where a result is cached."""
        for pattern in self.args.rerun:
            if pattern == "failed":
                prior = self.results.get(f"{model['name']}/{chip}")
                if prior is not None and not prior.get("converted"):
                    return True
            else:
                m, _, c = pattern.partition("/")
                if m in (model["name"], "*") and c in (chip, "*", ""):
                    return True
        return False

    def work(self, model: dict, chip: str) -> None:
        case = f"{model['name']}/{chip}"
        cached = None if self.wanted(model, chip) else self.cached(model, chip)
        if cached is None and self.args.cached_only:
            return
        result = cached or self.run_case(model, chip)
        with self.lock:
            self.results[case] = result
        self.save()
        state = "built" if result["converted"] else f"FAILED: {result.get('failure')}"
        print(f"{case}: {state} ({result['wall_seconds']} s{', cached' if cached else ''}, {result['edgedeploy']['ident']})", flush=True)


def from_report(report: dict, artifact: Path) -> dict:
    """What the corpus page shows of one build, from its report.json (and toolchain_verdict.json)."""
    convert = report.get("convert") or {}
    out = {
        "converted": convert.get("status") == "built",
        "convert_status": convert.get("status"),
        "build_seconds": report.get("build_seconds"),
        "convert_seconds": convert.get("seconds"),
        "workarounds": convert.get("workarounds") or [],
        "files_bytes": convert.get("size_bytes") or {},
        "model_bytes": (convert.get("size_bytes") or {}).get("model"),
        "convert_notes": convert.get("notes") or [],
        "audit": (report.get("audit") or {}).get("summary"),
    }
    verdict = report.get("toolchain_verdict") or {}
    out["verdict"] = {k: verdict.get(k) for k in ("status", "toolchain", "agreement", "agree", "compared", "failed", "reason") if verdict.get(k) is not None}
    out["verdict"]["disagreements"] = len(verdict.get("disagreements") or [])
    vfile = artifact / "toolchain_verdict.json"
    if vfile.is_file():
        nodes = json.loads(vfile.read_text()).get("verdict", {}).get("nodes", {})
        out["verdict"]["placement"] = dict(Counter(n.get("placement") for n in nodes.values()))
    accuracy = report.get("accuracy") or {}
    acc = {k: accuracy.get(k) for k in ("status", "reason", "metric", "metric_output", "metric_output_reason", "samples", "before", "after", "delta_percentage_points", "delta", "after_backend") if accuracy.get(k) is not None}
    outputs = {}
    for name, o in (accuracy.get("outputs") or {}).items():
        f = o.get("fidelity") or {}
        entry = {"cosine": f.get("cosine"), "snr_db": f.get("snr_db"), "max_abs_error": f.get("max_abs_error"), "producer": o.get("producer")}
        if o.get("detection"):
            entry["detection"] = {part: {k: o["detection"][part].get(k) for k in ("cosine", "snr_db")} for part in ("boxes", "scores")}
        if "before" in o:
            entry["before"], entry["after"] = o["before"], o.get("after")
        outputs[name] = entry
    if outputs:
        acc["outputs"] = outputs
    out["accuracy"] = acc
    vela = report.get("vela") or {}
    if vela:
        est = vela.get("estimates") or {}
        out["vela"] = {k: est.get(k) for k in ("estimated_inference_time_us", "estimated_cycles_total", "core_clock_hz", "sram_used_bytes", "dram_used_bytes") if est.get(k) is not None}
        out["vela"].update(npu_operators=vela.get("npu_operator_count"), cpu_operators=vela.get("cpu_operator_count"))
    return out


def prune(folder: Path) -> None:
    """Keep the reports and logs of an artifact; the compiled files can be rebuilt and are large."""
    for p in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if p.is_file() and not KEEP.search(p.name):
            p.unlink()
        elif p.is_file() and p.stat().st_size > 20_000_000:
            p.unlink()  # a huge log or table
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--chips", default=",".join(CHIPS))
    parser.add_argument("--jobs", type=int, default=1, help="cases at once (default 1: the toolchains use every core)")
    parser.add_argument("--timeout-s", type=float, default=5400, help="per case; edgedeploy's own --timeout (1800 s per toolchain run) is left at its default")
    parser.add_argument("--edgedeploy", type=Path, default=ROOT / ".venv" / "bin" / "edgedeploy", help="the CLI to run (default: this tree's .venv)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the models to build (default: the corpus; the trained set is scripts/trained/manifest.json)")
    parser.add_argument("--reuse-other-commits", action="store_true", help="take a case's newest cached result built at another commit")
    parser.add_argument("--rerun", default="", help="comma-separated MODEL/CHIP (either may be *) or 'failed': build again even if cached")
    parser.add_argument("--cached-only", action="store_true", help="record the cached cases again; run nothing")
    parser.add_argument("--order", choices=("size", "manifest"), default="size")
    args = parser.parse_args()
    args.rerun = [r for r in args.rerun.split(",") if r]
    manifest = json.loads(args.manifest.read_text())
    only = {n for n in args.only.split(",") if n}
    unknown = only - {m["name"] for m in manifest["models"]}
    if unknown:
        parser.error(f"unknown models: {', '.join(sorted(unknown))}")
    chips = [c for c in args.chips.split(",") if c]
    models = [m for m in manifest["models"] if not only or m["name"] in only]
    if args.order == "size":
        models.sort(key=lambda m: m["model"]["size_bytes"])
    missing = [m["name"] for m in models if not all(file_of(m[k]).is_file() for k in ("model", "calib", "eval"))]
    if missing:
        print(f"not generated here (run make_corpus.py): {', '.join(missing)}", file=sys.stderr)
    sweep = Sweep(args, manifest)
    print(f"sweep: edgedeploy {sweep.identity['version']} at {sweep.identity['ident']} ({sweep.identity['source']}); {sweep.toolchains}", flush=True)
    models = [with_file_sha256(m) for m in models if m["name"] not in missing]
    cases = [(m, c) for m in models for c in chips]
    started = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for f in cf.as_completed([pool.submit(sweep.work, m, c) for m, c in cases]):
            f.result()
    sweep.save()
    done = [sweep.results[f"{m['name']}/{c}"] for m, c in cases if f"{m['name']}/{c}" in sweep.results]
    print(f"sweep: {sum(r['converted'] for r in done)} of {len(done)} cases built, {len(cases) - len(done)} not run; "
          f"{time.monotonic() - started:.0f} s; results in {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
