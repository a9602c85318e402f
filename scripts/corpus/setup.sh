#!/usr/bin/env bash
# Create (idempotently) the corpus generator's environment at $EDGEDEPLOY_HOME/envs/corpus
# (default ~/.cache/edgedeploy/envs/corpus) from scripts/corpus/requirements.txt.
# A second run only checks that the pins import. pip uses your own configuration.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
HOME_DIR=${EDGEDEPLOY_HOME:-$HOME/.cache/edgedeploy}
ENV=$HOME_DIR/envs/corpus
PYTHON=${PYTHON:-python3}
STAMP=$ENV/.requirements.sha256
WANT=$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)
if [ -x "$ENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
    echo "corpus env: up to date at $ENV" >&2
else
    [ -x "$ENV/bin/python" ] || { echo "corpus env: creating $ENV" >&2; "$PYTHON" -m venv "$ENV"; }
    "$ENV/bin/python" -m pip install --disable-pip-version-check -q -r "$HERE/requirements.txt"
    echo "$WANT" > "$STAMP"
fi
"$ENV/bin/python" -c "import torch, torchvision, ultralytics, onnx, onnxruntime; print('corpus env:', 'torch', torch.__version__, 'torchvision', torchvision.__version__, 'ultralytics', ultralytics.__version__, 'onnx', onnx.__version__)" >&2
