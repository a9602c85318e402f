#!/usr/bin/env bash
# Set up edgedeploy on a fresh machine: a virtual environment in .venv with edgedeploy installed
# (editable, with the test extras: pytest, hypothesis, labgrid for the farm tests), then the
# toolchain environments named as arguments
# (`all` for every managed one). Idempotent: a second run only checks.
#
#   bash scripts/setup.sh            # edgedeploy only
#   bash scripts/setup.sh espdl      # plus the ESP-DL toolchain environment
#   bash scripts/setup.sh all        # plus every managed toolchain environment
#
# pip runs with your own configuration (pip.conf, PIP_INDEX_URL, ...): nothing is hard-coded.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($PYTHON --version)" >&2
    "$PYTHON" -m venv .venv
fi
echo "setup: installing edgedeploy into .venv" >&2
.venv/bin/python -m pip install --disable-pip-version-check -q -e '.[test]' 2>&1 | grep -v '^WARNING: Location' >&2 || true
.venv/bin/python -c "import edgedeploy" || { echo "setup: edgedeploy did not install" >&2; exit 1; }
if [ "$#" -gt 0 ]; then
    .venv/bin/edgedeploy toolchain install "$@"
fi
