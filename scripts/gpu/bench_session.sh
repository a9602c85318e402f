#!/usr/bin/env bash
# One GPU-machine session of docs/benchmarks.md, as steps (a call runs some; see the budget below).
#
#   bash scripts/gpu/bench_session.sh RUN STEP... [--before TREE]
#
#   RUN    a label (run1, run2): results go to /tmp/results-RUN and, tarred, to $OUT
#   STEPS  env             environment (GPU, driver, clocks, library versions, the tree's commit)
#          hand-densenet   scripts/gpu/hand_loop.py on DenseNet-121, batch 8, fp16 (4 variants)
#          hand-cnn        scripts/gpu/hand_loop.py on cnn_bilstm, batch 1, fp32, 1 thread
#          before-densenet the pre-change bench (--before TREE): torch-compile-cudagraphs-cuda, DenseNet-121 fp16
#          densenet-fp16   bench, DenseNet-121 batch 8 fp16, $DENSENET_FP16_BACKENDS (default: every torch CUDA backend)
#          densenet-fp32   bench, DenseNet-121 batch 8 fp32, $DENSENET_FP32_BACKENDS
#          cnn             bench, cnn_bilstm batch 1 fp32 1 thread, $CNN_BACKENDS
#
# Seen on the H200 machine (2026-12-01): models 40 s; hand-densenet 60 s; hand-cnn 45 s;
# before-densenet 130 s; densenet-fp16 with five backends 370 s; densenet-fp32 with three 130 s;
# cnn with seven about 300 s. Each torch session process costs 10-45 s (torch import, .pt2 load,
# compile): plan a call's steps to end well inside 10 minutes.
#
# Runs on the GPU machine's own python3 (torch with CUDA, onnx, onnxruntime, click, jinja2 are in
# its image): edgedeploy is laid out under /tmp/ed-* as the installed package would be (the
# package-dir mapping of pyproject.toml) and put on PYTHONPATH, so nothing is installed. The
# models are rebuilt from seeded code (scripts/gpu/make_bench_models.py); their ONNX hashes are
# checked against docs/benchmarks.md's. Each bench's JSON and text output, the hand loop's, the
# environment and the progress logs are tarred into $OUT/results-RUN-<first step>.tar.gz after
# every step, so a call cut short still brings back what it finished.
set -uo pipefail
RUN=${1:?run label}
shift
STEPS=()
BEFORE=
while [ $# -gt 0 ]; do
    case $1 in
        --before) BEFORE=$2; shift 2;;
        *) STEPS+=("$1"); shift;;
    esac
done
PART=${STEPS[0]:?name at least one step}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/out}
RES=/tmp/results-$RUN
MODELS=/tmp/bench-models
PY=${PY:-$(command -v python3)}
mkdir -p "$RES" "$OUT" "$MODELS"
export PYTHONUNBUFFERED=1 EDGEDEPLOY_HOME=/tmp/edhome
T0=$(date +%s)

say() { echo "[session $RUN/$PART +$(( $(date +%s) - T0 )) s] $*" >&2; }
pack() { tar -czf "$OUT/results-$RUN-$PART.tar.gz" -C /tmp "results-$RUN"; }

# edgedeploy as the wheel would install it: toolkit/ is the package, targets/ templates/
# firmware/ its subpackages (pyproject.toml's package-dir).
# The targets are found through entry points (pyproject.toml), so a dist-info folder carries them.
layout() {  # layout TREE DEST
    rm -rf "$2" && mkdir -p "$2/edgedeploy"
    cp -r "$1/toolkit/." "$2/edgedeploy/"
    for d in targets templates firmware; do cp -r "$1/$d" "$2/edgedeploy/$d"; done
    "$PY" - "$1/pyproject.toml" "$2" <<'EOF3'
import pathlib, sys, tomllib
project = tomllib.loads(pathlib.Path(sys.argv[1]).read_text())["project"]
info = pathlib.Path(sys.argv[2]) / f"edgedeploy-{project['version']}.dist-info"
info.mkdir()
(info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: edgedeploy\nVersion: {project['version']}\n")
groups = project.get("entry-points", {})
(info / "entry_points.txt").write_text("".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items()))
EOF3
}

bench() {  # bench SITE NAME ARGS...: one edgedeploy bench, JSON + text + progress into $RES
    local site=$1 name=$2; shift 2
    say "bench $name: $*"
    PYTHONPATH=$site "$PY" -m edgedeploy bench "$@" --torch-python "$PY" --out "$RES/$name.json" --force \
        >"$RES/$name.txt" 2> >(tee "$RES/$name.progress.log" >&2)
    say "bench $name: exit $?"
    pack
}

layout "$ROOT" /tmp/ed-after
if [ -n "$BEFORE" ]; then layout "$BEFORE" /tmp/ed-before; fi

if [ ! -f "$MODELS/models.json" ]; then
    say "making the models"
    "$PY" "$ROOT/scripts/gpu/make_bench_models.py" "$MODELS" >&2 || { say "make_bench_models failed"; pack; exit 1; }
fi
cp "$MODELS/models.json" "$RES/models.json"
# The ONNX files must be those docs/benchmarks.md names (same seeded weights, same exporter).
"$PY" - "$MODELS/models.json" >&2 <<'EOF2'
import json, sys
expected = {"cnn_bilstm": "24e95cc40c7e", "densenet121": "9da80525b2a1"}
for name, card in json.load(open(sys.argv[1])).items():
    got = card["onnx_sha256"][:12]
    print(f"model {name}: onnx sha256 {got}", "(as in docs/benchmarks.md)" if got == expected.get(name) else f"(NOT the documented {expected.get(name)})")
EOF2

ALL_TORCH_CUDA=torch-eager-cuda,torch-compile-cuda,torch-compile-cudagraphs-cuda,torch-eager-capture-cuda,torch-compile-capture-cuda
# torch-compile-cuda before torch-compile-capture-cuda: the capture backend then compiles from
# the shared cache the default-mode sessions filled.
DENSENET_FP16_BACKENDS=${DENSENET_FP16_BACKENDS:-$ALL_TORCH_CUDA}
DENSENET_FP32_BACKENDS=${DENSENET_FP32_BACKENDS:-ort-cpu,torch-eager-cuda,torch-eager-capture-cuda}
CNN_BACKENDS=${CNN_BACKENDS:-ort-cpu,torch-eager-cpu,$ALL_TORCH_CUDA}

for step in "${STEPS[@]}"; do
    case $step in
    env)
        {
            date -u +%Y-%m-%dT%H:%M:%SZ
            uname -r
            nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu --format=csv
            "$PY" -c 'import sys, torch, onnx, onnxruntime, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__, "numpy", numpy.__version__)'
            grep -m1 "model name" /proc/cpuinfo; nproc
            # The commit of the tree that was carried (a copy has no .git of its own).
            echo "edgedeploy tree $(cat "$ROOT/EDGEDEPLOY_TREE" 2>/dev/null || git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
            cat "$MODELS/models.json"
        } >"$RES/environment.txt" 2>&1
        ;;
    hand-densenet)
        say "hand loop: densenet121 b8 fp16"
        "$PY" "$ROOT/scripts/gpu/hand_loop.py" --model densenet121 --batch 8 --precision fp16 --pt2 "$MODELS/densenet121.pt2" \
            --out "$RES/hand_loop-densenet121-b8-fp16.json" >"$RES/hand_loop-densenet121-b8-fp16.txt"
        ;;
    hand-cnn)
        say "hand loop: cnn_bilstm b1 fp32, 1 thread"
        "$PY" "$ROOT/scripts/gpu/hand_loop.py" --model cnn_bilstm --batch 1 --precision fp32 --threads 1 --pt2 "$MODELS/cnn_bilstm.pt2" \
            --variants plain-eager,plain-graph,pt2-graph --out "$RES/hand_loop-cnn_bilstm-b1-fp32.json" >"$RES/hand_loop-cnn_bilstm-b1-fp32.txt"
        ;;
    before-densenet)
        [ -n "$BEFORE" ] || { say "before-densenet needs --before TREE"; continue; }
        bench /tmp/ed-before before-densenet121-b8-fp16 "$MODELS/densenet121.onnx" --torch-model "$MODELS/densenet121.pt2" \
            --batch 8 --precision fp16 --shared-compile-cache --backend torch-compile-cudagraphs-cuda
        ;;
    densenet-fp16)
        bench /tmp/ed-after densenet121-b8-fp16 "$MODELS/densenet121.onnx" --torch-model "$MODELS/densenet121.pt2" \
            --batch 8 --precision fp16 --shared-compile-cache --backend "$DENSENET_FP16_BACKENDS"
        ;;
    densenet-fp32)
        bench /tmp/ed-after densenet121-b8-fp32 "$MODELS/densenet121.onnx" --torch-model "$MODELS/densenet121.pt2" \
            --batch 8 --precision fp32 --shared-compile-cache --backend "$DENSENET_FP32_BACKENDS"
        ;;
    cnn)
        bench /tmp/ed-after cnn_bilstm-b1-fp32 "$MODELS/cnn_bilstm.onnx" --torch-model "$MODELS/cnn_bilstm.pt2" \
            --threads 1 --shared-compile-cache --backend "$CNN_BACKENDS"
        ;;
    *) say "unknown step $step";;
    esac
    pack
done
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,utilization.gpu --format=csv >"$RES/nvidia-smi-end-$PART.txt" 2>&1
pack
say "part $PART done"
for f in "$RES"/*.txt; do case $f in *hand_loop*) cat "$f";; esac; done
grep -h -A12 "^comparison:" "$RES"/*.txt 2>/dev/null | grep -v "^Ratios" || true
