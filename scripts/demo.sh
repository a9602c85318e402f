#!/usr/bin/env bash
# The main job on the bundled example, from a fresh clone: set up, then run edgedeploy on the
# sample MNIST model. Extra arguments are passed to `edgedeploy build`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/edgedeploy targets
.venv/bin/edgedeploy inspect
