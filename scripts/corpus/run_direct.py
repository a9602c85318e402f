#!/usr/bin/env python3
"""Every corpus model through every host toolchain, called directly (no edgedeploy in the loop).

    python3 scripts/corpus/run_direct.py [--only MODELS] [--chips CHIPS] [--jobs 2] [--timeout-s 1200]

One subprocess per case, run with the toolchain environment's own python
(~/.cache/edgedeploy/envs/{espdl,rknn,eiq}/bin/python) on the scripts in scripts/corpus/direct/:
esp-ppq for esp32s3 and esp32p4, rknn-toolkit2 for the six RKNN chips, onnx2tf full-int8 (the
imx8mp artifact) then Vela (imx93) in one case per model. Resumable: each case's result and log
are cached under $EDGEDEPLOY_HOME/corpus-direct/<key>/, the key being the model's sha256, the
chip, the toolchain version and the variant; a re-run only runs what is missing. Results go to
docs/corpus-direct.json after every case.

When rknn-toolkit2's own build log advises `config(disable_rules=[...])`, the case is run again
with that advice followed, and both results are recorded (variant "plain" and "workaround").

Uses only the standard library; run it with any Python 3.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
MANIFEST = ROOT / "tests" / "fixtures" / "corpus" / "corpus.json"
RESULTS = ROOT / "docs" / "corpus-direct.json"
CACHE = HOME / "corpus-direct"
DIRECT = Path(__file__).resolve().parent / "direct"
ESP_CHIPS = ("esp32s3", "esp32p4")
RKNN_CHIPS = ("rk3588", "rk3576", "rk3568", "rk3566", "rk3562", "rv1106")
EIQ_CHIPS = ("imx8mp", "imx93")
ENV_PACKAGES = {"espdl": ["esp-ppq"], "rknn": ["rknn-toolkit2"], "eiq": ["onnx2tf", "ethos-u-vela", "tensorflow-cpu"]}
# rknn-toolkit2 prints this on every build; it is not the error.
HARMLESS = re.compile(r"Unkown op target: 0")
ONNX2TF_ADVICE = "use the -kt or -kat option"
ADVICE = re.compile(r"disable_rules\s*=\s*\[\s*['\"]([A-Za-z0-9_]+)['\"]")


def model_paths(entry: dict) -> tuple[Path, Path]:
    def where(item):
        base = ROOT / "tests" / "fixtures" / "corpus" if item["where"] == "fixtures" else HOME / "corpus"
        return base / item["file"]

    return where(entry["model"]), where(entry["calib"])


def env_python(env: str) -> Path:
    return HOME / "envs" / env / "bin" / "python"


def env_version(env: str) -> str:
    code = "import importlib.metadata as m; print(', '.join(p + ' ' + m.version(p) for p in %r))" % ENV_PACKAGES[env]
    return subprocess.run([str(env_python(env)), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


ANSI = re.compile(r"\x1b\[[0-9;]*m")
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)|AssertionError|KeyError|IndexError)\b:?.*")
# Lines our own direct scripts raise after the toolchain already said why.
OWN_WORDS = ("load_onnx failed", "build failed", "export_rknn failed", "onnx2tf wrote no full-integer")


def toolchain_message(log: str) -> str | None:
    """The toolchain's own final error, from its log.

    rknn-toolkit2 prints `E <stage>: ...` (in colour); when that line opens a traceback, the
    exception line that closes it and the innermost toolkit function are the message. Else the
    last exception line of a Python traceback that is not one of our scripts' own wrappers.
    """
    lines = [ANSI.sub("", l).rstrip() for l in log.splitlines()]
    lines = [l for l in lines if l.strip()]
    e_lines = [i for i, l in enumerate(lines) if re.match(r"^E [A-Za-z_]+:", l) and not HARMLESS.search(l) and "rknn-toolkit2 version" not in l]
    if e_lines:
        i = e_lines[-1]
        head = lines[i]
        if head.rstrip().endswith("Traceback (most recent call last):"):
            where = None
            for l in lines[i + 1 :]:
                m = re.match(r'^\s*File "[^"]*", line \d+, in (.+)$', l)
                if m:
                    where = m.group(1)
                    continue
                if EXCEPTION_LINE.match(l.strip()):
                    stage = head.split(":", 1)[0]
                    return f"{stage}: {l.strip()}" + (f" (in {where})" if where else "")
        return head[:1000]
    node = next((l.split("onnx_op_name:", 1)[1].strip() for l in reversed(lines) if "ERROR:" in l and "onnx_op_name:" in l), None)
    found = None
    where = None
    for l in lines:
        m = re.match(r'^\s*File "([^"]*)", line (\d+), in (.+)$', l)
        if m:
            where = f"{m.group(3)}, {'/'.join(Path(m.group(1)).parts[-3:])}:{m.group(2)}"
        elif EXCEPTION_LINE.match(l.strip()) and not any(w in l for w in OWN_WORDS) and not l.startswith(" "):
            found = l.strip()[:1000] + (f" (in {where})" if where and "scripts/corpus/direct" not in where else "")
            where = None
    if found and node:
        found += f" (onnx2tf node {node})"
    return found


class NotCached(Exception):
    """--cached-only met a case that has not run yet."""


class Runner:
    def __init__(self, timeout_s: float, results_path: Path):
        self.timeout_s = timeout_s
        self.results_path = results_path
        self.lock = threading.Lock()
        self.results: dict[str, dict] = {}
        if results_path.exists():
            for c in json.loads(results_path.read_text()).get("cases", []):
                self.results[c["case"]] = c
        self.versions: dict[str, str] = {}

    def save(self, meta: dict) -> None:
        with self.lock:
            data = {**meta, "cases": sorted(self.results.values(), key=lambda c: (c["order"], c["chip"], c["variant"]))}
            tmp = self.results_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1) + "\n")
            tmp.replace(self.results_path)

    def run_case(self, env: str, script: str, args: list[str], key: str) -> tuple[dict, str, Path]:
        """Run one case (or reuse its cached result); (result.json content, log text, case folder)."""
        folder = CACHE / key
        result_file = folder / "result.json"
        log_file = folder / "log.txt"
        if result_file.is_file() and log_file.is_file():
            return json.loads(result_file.read_text()), log_file.read_text(errors="replace"), folder
        if getattr(self, "cached_only", False):
            raise NotCached(key)
        folder.mkdir(parents=True, exist_ok=True)
        env_vars = {**os.environ, "OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "PYTHONUNBUFFERED": "1", "CUDA_VISIBLE_DEVICES": ""}
        started = time.monotonic()
        with open(log_file, "w") as log:
            proc = subprocess.Popen([str(env_python(env)), str(DIRECT / script), *args, str(folder / "out")],
                                    stdout=log, stderr=subprocess.STDOUT, cwd=folder, env=env_vars, start_new_session=True)
            try:
                rc = proc.wait(timeout=self.timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc, timed_out = proc.returncode, True
        seconds = round(time.monotonic() - started, 1)
        text = log_file.read_text(errors="replace")
        out_result = folder / "out" / "result.json"
        if out_result.is_file():
            result = json.loads(out_result.read_text())
        else:
            if timed_out:
                why = f"timed out after {self.timeout_s:.0f} s"
            elif rc < 0:
                why = f"the toolchain process crashed ({signal.Signals(-rc).name}) before writing a result"
            else:
                why = f"the toolchain process exited {rc} before writing a result"
            result = {"converted": False, "error": why}
            if env == "eiq":
                result = {"imx8mp": dict(result), "imx93": dict(result)}
        result["_wall_s"] = seconds
        result["_exit"] = rc
        # Calibration copies are large and can be regenerated: keep results, logs and artifacts.
        for sub in ("out/dataset",):
            p = folder / sub
            if p.is_dir():
                for f in p.iterdir():
                    f.unlink()
                p.rmdir()
        for f in (folder / "out").glob("calib_*.npy"):
            f.unlink()
        for f in (folder / "out").glob("calibration_image_sample_data_*.npy"):
            f.unlink()
        result_file.write_text(json.dumps(result, indent=1))
        return result, text, folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names")
    parser.add_argument("--chips", default=",".join(ESP_CHIPS + RKNN_CHIPS + EIQ_CHIPS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout-s", type=float, default=1200)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--cached-only", action="store_true", help="record the cached cases again (messages re-read from their logs); run nothing")
    args = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text())
    only = {n for n in args.only.split(",") if n}
    chips = [c for c in args.chips.split(",") if c]
    models = [m for m in manifest["models"] if not only or m["name"] in only]
    # Small models first, so that an interrupted run has covered as many models as it could.
    models.sort(key=lambda m: m["model"]["size_bytes"])
    runner = Runner(args.timeout_s, args.results)
    runner.cached_only = args.cached_only
    envs = {e for e, cs in (("espdl", ESP_CHIPS), ("rknn", RKNN_CHIPS), ("eiq", EIQ_CHIPS)) if set(cs) & set(chips)}
    runner.versions = {e: env_version(e) for e in sorted(envs)}
    meta = {
        "about": "Each corpus model converted by each host toolchain called directly, as a user would without edgedeploy "
        "(scripts/corpus/run_direct.py; the scripts in scripts/corpus/direct/). 'toolchain_message' is the toolchain's "
        "own final error line from its log.",
        "toolchains": runner.versions,
        "timeout_s": args.timeout_s,
    }
    order = {m["name"]: i for i, m in enumerate(manifest["models"])}
    missing = []
    jobs = []
    for m in models:
        model, calib = model_paths(m)
        if not model.is_file() or not calib.is_file():
            missing.append(m["name"])
            continue
        sha = m["model"]["sha256"]
        for chip in chips:
            if chip in ESP_CHIPS:
                jobs.append((m, chip, "espdl", "espdl_direct.py", [str(model), str(calib), chip]))
            elif chip in RKNN_CHIPS:
                jobs.append((m, chip, "rknn", "rknn_direct.py", [str(model), str(calib), chip]))
        if set(EIQ_CHIPS) & set(chips):
            jobs.append((m, "imx", "eiq", "eiq_direct.py", [str(model), str(calib)]))
    if missing:
        print(f"not generated here (run make_corpus.py): {', '.join(missing)}", file=sys.stderr)

    def record(m, chip, env, variant, result, text, folder, extra=None):
        name = m["name"]
        entry = {
            "case": f"{name}/{chip}/{variant}",
            "order": order[name],
            "model": name,
            "model_sha256": m["model"]["sha256"],
            "chip": chip,
            "toolchain": runner.versions[env],
            "variant": variant,
            "converted": bool(result.get("converted")),
            "error": result.get("error"),
            "toolchain_message": None if result.get("converted") else (
                result.get("error") if str(result.get("error", "")).startswith(("the toolchain process", "timed out")) else (toolchain_message(text) or result.get("error"))),
            "seconds": result.get("seconds", result.get("_wall_s")),
            "artifact_bytes": result.get("artifact_bytes"),
            "cache": str(folder.relative_to(HOME)),
        }
        for k in ("float_layers", "cpu_operators", "disable_rules"):
            if result.get(k) not in (None, []):
                entry[k] = result[k]
        if extra:
            entry.update(extra)
        runner.results[entry["case"]] = entry
        runner.save(meta)
        state = "converts" if entry["converted"] else f"FAILS: {entry['toolchain_message']}"
        print(f"{name} {chip} {variant}: {state} ({entry['seconds']} s)", flush=True)

    def work(job):
        m, chip, env, script, cargs = job
        key = hashlib.sha256(f"{m['model']['sha256']} {chip} {runner.versions[env]} plain".encode()).hexdigest()[:20]
        result, text, folder = runner.run_case(env, script, cargs, key)
        # A toolchain that rewrites its input (esp-ppq and onnx2tf both do) would corrupt the
        # corpus for every later case: the direct scripts pass copies, and this checks it.
        if hashlib.sha256(Path(cargs[0]).read_bytes()).hexdigest() != m["model"]["sha256"]:
            raise SystemExit(f"{cargs[0]} changed during the {env} case: a toolchain wrote to its input; regenerate it with make_corpus.py")
        if env == "eiq":
            for c in EIQ_CHIPS:
                if c in chips:
                    record(m, c, env, "plain", {**result.get(c, {}), "_wall_s": result.get("_wall_s")}, text, folder)
            if not result.get("imx8mp", {}).get("converted") and ONNX2TF_ADVICE in ANSI.sub("", text):
                # onnx2tf's own error advice: -kat (keep the layout) for inputs that are not
                # channels-first; here the 3-D ones (sequences [N, T, F], states [L, N, H]).
                keep = [i["name"] for i in m["inputs"] if len(i["shape"]) == 3]
                if keep:
                    wkey = hashlib.sha256(f"{m['model']['sha256']} imx {runner.versions[env]} kat={keep}".encode()).hexdigest()[:20]
                    r2, t2, f2 = runner.run_case(env, script, cargs + ["--keep-input-layout", *keep], wkey)
                    for c in EIQ_CHIPS:
                        if c in chips:
                            record(m, c, env, "workaround", {**r2.get(c, {}), "_wall_s": r2.get("_wall_s")}, t2, f2,
                                   {"workaround": f"onnx2tf keep_ncw_or_nchw_or_ncdhw_input_names={keep} (-kat), as onnx2tf's error message advises"})
            return
        advice = sorted(set(ADVICE.findall(text)))
        record(m, chip, env, "plain", result, text, folder, {"toolchain_advice": [f"disable_rules=['{a}']" for a in advice]} if advice else None)
        if env == "rknn" and not result.get("converted") and advice:
            # Follow the toolkit's advice as a user would: when the next build fails on another
            # rule with the same advice, add that rule too (at most three rounds).
            rules = list(advice)
            for _ in range(3):
                wkey = hashlib.sha256(f"{m['model']['sha256']} {chip} {runner.versions[env]} disable_rules={rules}".encode()).hexdigest()[:20]
                result2, text2, folder2 = runner.run_case(env, script, cargs + ["--disable-rule", *rules], wkey)
                more = [a for a in sorted(set(ADVICE.findall(text2))) if a not in rules]
                if result2.get("converted") or not more:
                    break
                rules += more
            record(m, chip, env, "workaround", result2, text2, folder2, {"workaround": f"config(disable_rules={rules}) as the toolkit's build log advises"})

    started = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        not_run = 0
        for f in cf.as_completed([pool.submit(work, j) for j in jobs]):
            try:
                f.result()
            except NotCached:
                not_run += 1
    if not_run:
        print(f"{not_run} cases have not run yet (--cached-only)", file=sys.stderr)
    print(f"done: {len(jobs)} cases in {time.monotonic() - started:.0f} s; results in {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
