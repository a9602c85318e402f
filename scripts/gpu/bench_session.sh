#!/usr/bin/env bash
# One GPU-machine session of docs/benchmarks.md, in two parts (each well inside one 10-minute call).
#
#   bash scripts/gpu/bench_session.sh PART RUN [BEFORE_TREE]
#
#   PART         a: environment, models, the hand-written loop (scripts/gpu/hand_loop.py) on both
#                   models, DenseNet-121 fp32, and (if BEFORE_TREE is given) the pre-change bench's
#                   torch-compile-cudagraphs-cuda on DenseNet-121 fp16 for the before/after check
#                b: DenseNet-121 fp16 on every torch CUDA backend, then cnn_bilstm on the doc's backends
#   RUN          a label (run1, run2): results go to /tmp/results-RUN and, tarred, to $OUT
#   BEFORE_TREE  a checkout of edgedeploy before the change, to time the old bench beside the new
#
# Runs on the GPU machine's own python3 (torch with CUDA, onnx, onnxruntime, click, jinja2 are in
# its image): edgedeploy is laid out under /tmp/ed-* as the installed package would be (the
# package-dir mapping of pyproject.toml) and put on PYTHONPATH, so nothing is installed. The
# models are rebuilt from seeded code (scripts/gpu/make_bench_models.py); their ONNX hashes are
# checked against docs/benchmarks.md's. Each bench's JSON and text output, the hand loop's, the
# environment and the progress logs are tarred into $OUT/results-RUN-PART.tar.gz after every step,
# so a run cut short still brings back what it finished.
set -uo pipefail
PART=${1:?part a or b}
RUN=${2:?run label}
BEFORE=${3:-}
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
layout() {  # layout TREE DEST
    rm -rf "$2" && mkdir -p "$2/edgedeploy"
    cp -r "$1/toolkit/." "$2/edgedeploy/"
    for d in targets templates firmware; do cp -r "$1/$d" "$2/edgedeploy/$d"; done
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
[ -n "$BEFORE" ] && layout "$BEFORE" /tmp/ed-before

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

if [ "$PART" = a ]; then
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
    pack
    say "hand loop: densenet121 b8 fp16"
    "$PY" "$ROOT/scripts/gpu/hand_loop.py" --model densenet121 --batch 8 --precision fp16 --pt2 "$MODELS/densenet121.pt2" \
        --out "$RES/hand_loop-densenet121-b8-fp16.json" >"$RES/hand_loop-densenet121-b8-fp16.txt"
    pack
    say "hand loop: cnn_bilstm b1 fp32, 1 thread"
    "$PY" "$ROOT/scripts/gpu/hand_loop.py" --model cnn_bilstm --batch 1 --precision fp32 --threads 1 --pt2 "$MODELS/cnn_bilstm.pt2" \
        --variants plain-eager,plain-graph,pt2-graph --out "$RES/hand_loop-cnn_bilstm-b1-fp32.json" >"$RES/hand_loop-cnn_bilstm-b1-fp32.txt"
    pack
    if [ -n "$BEFORE" ]; then
        bench /tmp/ed-before before-densenet121-b8-fp16 "$MODELS/densenet121.onnx" --torch-model "$MODELS/densenet121.pt2" \
            --batch 8 --precision fp16 --shared-compile-cache --backend torch-compile-cudagraphs-cuda
    fi
    bench /tmp/ed-after densenet121-b8-fp32 "$MODELS/densenet121.onnx" --torch-model "$MODELS/densenet121.pt2" \
        --batch 8 --precision fp32 --shared-compile-cache --backend ort-cpu,torch-eager-cuda,torch-eager-capture-cuda
elif [ "$PART" = b ]; then
    # torch-compile-cuda before torch-compile-capture-cuda: the capture backend then compiles
    # from the shared cache the default-mode sessions filled.
    bench /tmp/ed-after densenet121-b8-fp16 "$MODELS/densenet121.onnx" --torch-model "$MODELS/densenet121.pt2" \
        --batch 8 --precision fp16 --shared-compile-cache \
        --backend torch-eager-cuda,torch-compile-cuda,torch-compile-cudagraphs-cuda,torch-eager-capture-cuda,torch-compile-capture-cuda
    bench /tmp/ed-after cnn_bilstm-b1-fp32 "$MODELS/cnn_bilstm.onnx" --torch-model "$MODELS/cnn_bilstm.pt2" \
        --threads 1 --shared-compile-cache \
        --backend ort-cpu,torch-eager-cpu,torch-eager-cuda,torch-compile-cuda,torch-compile-cudagraphs-cuda,torch-eager-capture-cuda,torch-compile-capture-cuda
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,utilization.gpu --format=csv >"$RES/nvidia-smi-end-$PART.txt" 2>&1
pack
say "part $PART done"
for f in "$RES"/*.txt; do case $f in *hand_loop*) cat "$f";; esac; done
grep -h -A12 "^comparison:" "$RES"/*.txt 2>/dev/null | grep -v "^Ratios" || true
