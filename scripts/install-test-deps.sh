#!/usr/bin/env bash
# Installs what kt's test suite needs beyond Rust on a bare machine (Debian + python3):
#   numpy, used by the Python sandbox tests (LLM-written input generators run with it);
#   the linter shellcheck, used by kt-experiments' test of the SLURM scripts (Debian package; installed only as root on
#   Debian, skipped with a message elsewhere);
#   chromium, headless, used by the test that loads kt's HTML run report (same rule as shellcheck).
# Idempotent: anything already present is left alone. Used by .ci/run; safe to run by hand.
set -euo pipefail

python=${KT_PYTHON:-python3}
if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "installing numpy for $python"
  "$python" -m pip install --quiet --disable-pip-version-check 'numpy>=1.26,<3'
fi
"$python" -c 'import numpy; print("numpy", numpy.__version__, "ok")'

if command -v shellcheck >/dev/null 2>&1; then
  echo "shellcheck $(shellcheck --version | sed -n 's/^version: //p') ok"
elif [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1 && [[ -f /etc/debian_version ]]; then
  echo "installing shellcheck"
  apt-get install -y -qq shellcheck >/dev/null || { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; }
  echo "shellcheck $(shellcheck --version | sed -n 's/^version: //p') ok"
else
  echo "shellcheck not installed and this is not Debian as root: skipping it (kt-experiments' SLURM test then" \
    "skips its shellcheck part, or fails when CI=true; install shellcheck by hand)"
fi

if command -v chromium >/dev/null 2>&1; then
  echo "chromium ok"
elif [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1 && [[ -f /etc/debian_version ]]; then
  echo "installing chromium"
  apt-get install -y -qq chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
  echo "chromium ok"
else
  echo "chromium not installed and this is not Debian as root: skipping it (the HTML report test then skips its" \
    "browser part, or fails when CI=true; install chromium by hand)"
fi
