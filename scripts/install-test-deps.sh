#!/usr/bin/env bash
# Installs what kt's test suite needs beyond Rust on a bare machine (Debian + python3):
#   numpy, used by the Python sandbox tests (LLM-written input generators run with it).
# Idempotent: anything already present is left alone. Used by .ci/run; safe to run by hand.
set -euo pipefail

python=${KT_PYTHON:-python3}
if ! "$python" -c 'import numpy' 2>/dev/null; then
  echo "installing numpy for $python"
  "$python" -m pip install --quiet --disable-pip-version-check 'numpy>=1.26,<3'
fi
"$python" -c 'import numpy; print("numpy", numpy.__version__, "ok")'
