#!/usr/bin/env bash
# The main job on the bundled example, from a fresh clone: set up edgedeploy and the ESP-DL
# toolchain environment, then build the sample MNIST model for the ESP32-S3 (audit, esp-ppq
# int8 conversion, top-1 before/after, the ESP-IDF firmware project). Extra arguments go to
# `edgedeploy build` (e.g. --target esp32p4, --force, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh espdl
exec .venv/bin/edgedeploy build --target esp32s3 "$@"
