#!/usr/bin/env python3
"""How long `edgedeploy audit MODEL --target all` takes beside reading the model with ONNX, and how big its JSON is.

    python scripts/bench_audit.py --label "session 1"      # DenseNet-121 of the corpus, 9 rounds
    python scripts/bench_audit.py --rounds 15 --model other.onnx
    python scripts/bench_audit.py --fail-above 1.5        # exit 1 when a median ratio is over 1.5
    python scripts/bench_audit.py --one-process           # also time --format json in one process
    python scripts/bench_audit.py --help-only --rounds 20 # only `edgedeploy --help` against `import click`

Issue 27 asks that the audit of a real 700-1000-node model on every chip take at most 1.5 times
as long as reading that model with ONNX, for text and for --format json, and that its JSON fit
in 1.5 MB (issue 16). The model is the corpus's DenseNet-121 (the ONNX model zoo's light model
with seeded weights, 910 nodes, 33 MB), found through the corpus manifest
(tests/fixtures/corpus/corpus.json) and checked against its sha256; if it is missing it is
regenerated with the corpus script (scripts/corpus/make_corpus.py --only onnx_zoo_densenet121).
`--model` times another file.

The base (`onnx`) reads the model as ONNX's documentation shows it: `onnx.load`, then
`onnx.checker.check_model`, then `onnx.shape_inference.infer_shapes` in strict mode with types
checked and data propagated, the mode the audit runs it in (edgedeploy.model.intake). Every tool
that validates a model and knows its shapes does that much. `import` (`python -c "import onnx,
numpy"`, the base of issue 16) is timed beside it, as a reference: the part of every figure that
is starting Python and importing ONNX.

Every command is a fresh process, as a user or CI runs it, so imports count. A round runs the
commands in turn (base, import, text, json, in a rotating order, so a change in the machine's
load falls on all of them alike); one round first is a warm-up, not counted. Each round gives a
ratio per format (the audit's wall time over the base's in that round); the figures are the
median, the 10th-90th percentiles and the range over rounds, with the CPU time (user+sys)
beside them, since on a shared machine wall time includes waiting for a core.

The audit runs as users get it: on Linux with two CPUs the program runs ONNX's checker and half
the chips in a forked second process (edgedeploy.forked), so its CPU time is more than its wall
time. `--one-process` adds a command, `--format json` with EDGEDEPLOY_AUDIT_PROCESSES=1,
to show what the second process buys.

`edgedeploy --help` is timed in the same rounds against `python -c "import click"` (issue 27
asks for at most 1.3x): every round also runs that pair --help-repeats times, the two in
alternating order, and each pair gives one ratio; the figures are the median, percentiles and
range over all pairs. `--help-only` times just the pair (no model needed).

The processes run as an installed package runs: with Python's bytecode cached (pip compiles it
at install; an editable install writes it on first import). PYTHONDONTWRITEBYTECODE, which this
machine's shells set, would make every run compile edgedeploy's sources again (`--compile-each-run`
measures that); the bytecode goes to a temporary PYTHONPYCACHEPREFIX, for the base as well.

`--label` names the run (e.g. "session 2"); the last line is a Markdown table row of the run's
figures, for docs/audit.md's table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL_NAME = "onnx_zoo_densenet121"
MANIFEST = REPO / "tests" / "fixtures" / "corpus" / "corpus.json"
HOME = Path(os.environ.get("EDGEDEPLOY_HOME", Path.home() / ".cache" / "edgedeploy"))
CORPUS_SCRIPT = REPO / "scripts" / "corpus" / "make_corpus.py"
CORPUS_PYTHON = HOME / "envs" / "corpus" / "bin" / "python"
# The base: the model read as ONNX's documentation shows it, shape inference in the audit's mode.
READ_WITH_ONNX = (
    "import sys, onnx; model = onnx.load(sys.argv[1]); onnx.checker.check_model(model); "
    "onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)"
)
IMPORT = [sys.executable, "-c", "import onnx, numpy"]  # issue 16's base, a reference
REFERENCES = ("import",)
MAX_RATIO = 1.5
CLICK_BASE = [sys.executable, "-c", "import click"]
MAX_HELP_RATIO = 1.3
MAX_JSON_BYTES = int(1.5 * 1e6)


def corpus_model() -> tuple[Path, str | None]:
    """The DenseNet-121 corpus model (path, sha256 the manifest records), regenerated if missing."""
    entry = None
    if MANIFEST.exists():
        entry = next((m for m in json.loads(MANIFEST.read_text())["models"] if m["name"] == MODEL_NAME), None)
    if entry is not None:
        folder = HOME / "corpus" if entry["model"]["where"] == "home" else MANIFEST.parent
        path, sha256 = folder / entry["model"]["file"], entry["model"]["sha256"]
    else:
        # The corpus is not in this checkout (its branch not merged yet): where its script puts the model.
        path, sha256 = HOME / "corpus" / f"{MODEL_NAME}.onnx", None
    if not path.exists():
        if not (CORPUS_SCRIPT.exists() and CORPUS_PYTHON.exists()):
            sys.exit(f"{path} is missing; make it with `bash scripts/corpus/setup.sh` and `{CORPUS_PYTHON} scripts/corpus/make_corpus.py --only {MODEL_NAME}`, or pass --model.")
        print(f"regenerating {path.name} with {CORPUS_SCRIPT.relative_to(REPO)} ...", file=sys.stderr)
        subprocess.run([str(CORPUS_PYTHON), str(CORPUS_SCRIPT), "--only", MODEL_NAME], check=True, cwd=REPO)
    return path, sha256


def edgedeploy_command() -> list[str]:
    """The console script next to this interpreter (what users run), else `python -m edgedeploy`."""
    script = Path(sys.executable).with_name("edgedeploy")
    return [str(script)] if script.exists() else [sys.executable, "-m", "edgedeploy"]


def timed(cmd: list[str], env: dict, stdout=subprocess.DEVNULL) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, stdout=stdout, stderr=subprocess.DEVNULL, env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the sorted values (numpy's default method)."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def spread(values: list[float], digits: int = 3) -> str:
    """Median, 10th-90th percentiles and range of `values`."""
    f = f".{digits}f"
    return (
        f"median {statistics.median(values):{f}} (p10-p90 {percentile(values, 10):{f}}-{percentile(values, 90):{f}}, "
        f"range {min(values):{f}}-{max(values):{f}})"
    )


def short(values: list[float], digits: int = 2) -> str:
    """`median (min-max)`, for the Markdown row."""
    f = f".{digits}f"
    return f"{statistics.median(values):{f}} ({min(values):{f}}-{max(values):{f}})"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help=f"the model to audit (default: the corpus's {MODEL_NAME})")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds (each: base, import, text, json), after one warm-up round")
    parser.add_argument("--compile-each-run", action="store_true", help="keep PYTHONDONTWRITEBYTECODE: every process compiles edgedeploy's sources again")
    parser.add_argument("--fail-above", type=float, metavar="RATIO", help="exit 1 when a median audit ratio is above RATIO, the --help ratio above 1.3 or the JSON over 1.5 MB")
    parser.add_argument("--one-process", action="store_true", help="also time --format json with EDGEDEPLOY_AUDIT_PROCESSES=1 (every chip in one process)")
    parser.add_argument("--help-repeats", type=int, default=5, metavar="N", help="`edgedeploy --help` and `import click` pairs per round (default 5)")
    parser.add_argument("--help-only", action="store_true", help="time only `edgedeploy --help` against `python -c \"import click\"` (no model)")
    parser.add_argument("--label", default="", help="the run's name in the Markdown row printed last (e.g. \"session 2\")")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.help_repeats < 1:
        parser.error("--rounds and --help-repeats must be at least 1")
    return args


def the_model(args) -> tuple[Path, str]:
    """The model to audit and its sha256 (the corpus's, checked against its manifest, by default)."""
    expected_sha = None
    if args.model is None:
        path, expected_sha = corpus_model()
    else:
        path = args.model.resolve()
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    if expected_sha and sha256 != expected_sha:
        sys.exit(f"{path} has sha256 {sha256}, not the corpus manifest's {expected_sha}; regenerate it with {CORPUS_SCRIPT.relative_to(REPO)}.")
    return path, sha256


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.help_only:
        return help_only(args)
    path, sha256 = the_model(args)
    audit = edgedeploy_command() + ["audit", str(path), "--target", "all"]
    commands = {
        "base": [sys.executable, "-c", READ_WITH_ONNX, str(path)],
        "import": IMPORT,
        "text": audit,
        "json": audit + ["--format", "json"],
    }
    if args.one_process:
        commands["json1"] = ["env", "EDGEDEPLOY_AUDIT_PROCESSES=1", *commands["json"]]
    cache = Path(tempfile.mkdtemp(prefix="edgedeploy-bench-pycache-"))
    env = process_env(args, cache)
    pairs = HelpPairs(args.help_repeats)
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    try:
        out = subprocess.run(commands["json"], capture_output=True, env=env)
        if out.returncode != 0:
            print(out.stderr.decode(errors="replace"), file=sys.stderr)
            return out.returncode
        report = json.loads(out.stdout)
        json_bytes = len(out.stdout)
        detail_bytes = len(subprocess.run(commands["json"] + ["--detail"], capture_output=True, env=env, check=True).stdout)
        for cmd in commands.values():  # warm-up: bytecode cache, page cache
            timed(cmd, env)
        pairs.warm_up(env)
        load_before = os.getloadavg()
        wall, cpu = run_rounds(commands, args.rounds, env, pairs)
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    ended = time.strftime("%H:%M", time.gmtime())

    formats = [name for name in commands if name != "base"]
    ratios = {fmt: [a / b for a, b in zip(wall[fmt], wall["base"])] for fmt in formats}
    cpu_ratios = {fmt: [a / b for a, b in zip(cpu[fmt], cpu["base"])] for fmt in formats}
    print(f"model: {path.name}, {report['model']['nodes']} nodes, {path.stat().st_size} bytes, sha256 {sha256[:16]}...")
    print(f"chips: {len(report['audits'])}; machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"run: {started}-{ended} UTC; bytecode: {'compiled by every process (PYTHONDONTWRITEBYTECODE=1)' if args.compile_each_run else 'cached, as an installed package'}; {args.rounds} rounds after one warm-up, each command a fresh process")
    for name, cmd in commands.items():
        if name == "base":
            shown = 'python -c "' + READ_WITH_ONNX.replace("sys.argv[1]", "MODEL").replace("import sys, onnx", "import onnx") + '"'
        elif name in REFERENCES:
            shown = f'python -c "{cmd[-1]}"'
        else:
            prefix = "EDGEDEPLOY_AUDIT_PROCESSES=1 " if name == "json1" else ""
            shown = prefix + "edgedeploy " + " ".join(cmd[cmd.index("audit"):]).replace(str(path), "MODEL")
        print(f"  {name:7s} {shown}")
        print(f"          wall {spread(wall[name])} s; CPU {spread(cpu[name])} s")
    for fmt in formats:
        kind = "reference " if fmt in REFERENCES else ""
        goal = f" (goal: median at most {MAX_RATIO})" if fmt in ("text", "json") else ""
        print(f"ratio {kind}{fmt}/base: wall {spread(ratios[fmt], 2)}{goal}; CPU {spread(cpu_ratios[fmt], 2)}")
    print(f"JSON: {json_bytes} bytes ({json_bytes / 1e6:.2f} MB; limit 1.5 MB); with --detail {detail_bytes} bytes")
    pairs.print_figures()
    print("Markdown row (run | base | text | text/base | json/base | click | --help | help/click; wall, median (range)):")
    print(
        f"| {args.label or 'run'} ({started}-{ended} UTC, load {load_before[0]:.1f}-{load_after[0]:.1f}) | {short(wall['base'])} s | {short(wall['text'])} s "
        f"| {short(ratios['text'])} | {short(ratios['json'])} | {short(pairs.wall['click'], 3)} s | {short(pairs.wall['help'], 3)} s | {short(pairs.ratios())} |"
    )
    if args.fail_above is not None:
        over = [fmt for fmt in ("text", "json") if statistics.median(ratios[fmt]) > args.fail_above]
        over += ["--help"] if pairs.over_limit() else []
        if over or json_bytes > MAX_JSON_BYTES:
            print(f"over the limit: {', '.join(over) or 'JSON size'}", file=sys.stderr)
            return 1
    return 0


def run_rounds(commands: dict, rounds: int, env: dict, pairs: "HelpPairs") -> tuple[dict, dict]:
    """Wall and CPU seconds of every command per round, in a rotating order, the --help pairs after each round."""
    wall: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    names = list(commands)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            w, c = timed(commands[name], env)
            wall[name].append(w)
            cpu[name].append(c)
        pairs.round(env)
    return wall, cpu


def process_env(args, cache: Path) -> dict:
    """The timed processes' environment: bytecode cached under `cache` unless --compile-each-run."""
    env = dict(os.environ)
    if args.compile_each_run:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


class HelpPairs:
    """`edgedeploy --help` and `python -c "import click"`, timed as pairs within the rounds.

    A pair runs the two one after the other, in alternating order from pair to pair, so a change
    in the machine's load falls on both; each pair gives one ratio (help over click).
    """

    def __init__(self, repeats: int):
        self.repeats = repeats
        self.commands = {"click": CLICK_BASE, "help": edgedeploy_command() + ["--help"]}
        self.wall: dict[str, list[float]] = {"click": [], "help": []}
        self.cpu: dict[str, list[float]] = {"click": [], "help": []}

    def warm_up(self, env: dict) -> None:
        for cmd in self.commands.values():
            timed(cmd, env)

    def round(self, env: dict) -> None:
        for _ in range(self.repeats):
            order = ("click", "help") if len(self.wall["help"]) % 2 == 0 else ("help", "click")
            for name in order:
                w, c = timed(self.commands[name], env)
                self.wall[name].append(w)
                self.cpu[name].append(c)

    def ratios(self, kind: str = "wall") -> list[float]:
        figures = self.wall if kind == "wall" else self.cpu
        return [h / c for h, c in zip(figures["help"], figures["click"])]

    def over_limit(self) -> bool:
        return statistics.median(self.ratios()) > MAX_HELP_RATIO

    def print_figures(self) -> None:
        print(f"--help: {len(self.wall['help'])} pairs ({self.repeats} per round), each a fresh process, in alternating order")
        print('  click   python -c "import click"')
        print(f"          wall {spread(self.wall['click'])} s; CPU {spread(self.cpu['click'])} s")
        print("  help    edgedeploy --help")
        print(f"          wall {spread(self.wall['help'])} s; CPU {spread(self.cpu['help'])} s")
        print(f"ratio help/click: wall {spread(self.ratios('wall'), 2)}; CPU {spread(self.ratios('cpu'), 2)} (goal: median at most {MAX_HELP_RATIO})")


def help_only(args) -> int:
    """--help-only: the pairs alone, `--rounds` rounds of `--help-repeats` pairs."""
    cache = Path(tempfile.mkdtemp(prefix="edgedeploy-bench-pycache-"))
    env = process_env(args, cache)
    pairs = HelpPairs(args.help_repeats)
    try:
        pairs.warm_up(env)
        load_before = os.getloadavg()
        for _ in range(args.rounds):
            pairs.round(env)
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"bytecode: {'compiled by every process (PYTHONDONTWRITEBYTECODE=1)' if args.compile_each_run else 'cached, as an installed package'}; {args.rounds} rounds after one warm-up")
    pairs.print_figures()
    return 1 if args.fail_above is not None and pairs.over_limit() else 0


if __name__ == "__main__":
    sys.exit(main())
