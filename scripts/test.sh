#!/usr/bin/env bash
# The test suite from a fresh clone: system packages the tests use, edgedeploy, every managed
# toolchain environment, then pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: a real sshd for the SSH transport tests, Chromium for the HTML report check,
# ser2net for the labgrid farm tests (the exporter serves serial ports with it, as on a real farm).
need_apt=()
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ser2net >/dev/null 2>&1 || [ -x /usr/sbin/ser2net ] || need_apt+=(ser2net)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ "${#need_apt[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "test: installing ${need_apt[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    else
        echo "test: cannot install ${need_apt[*]} (needs root and apt-get); their tests will be skipped" >&2
    fi
fi

# The SSH tests run commands through root's login shell on a loopback sshd; on machines where
# that shell's rc file runs `pyenv init`, a rehash lock left behind by a killed process makes
# every remote command wait for pyenv's lock time-out. A lock older than a minute is stale.
find "${PYENV_ROOT:-$HOME/.pyenv}/shims" -maxdepth 1 -name .pyenv-shim -mmin +1 -delete 2>/dev/null || true

bash scripts/setup.sh all
.venv/bin/edgedeploy toolchain doctor
exec .venv/bin/python -m pytest -q "$@"
