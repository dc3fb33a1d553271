#!/usr/bin/env bash
# Builds kt's Python module (debug build, quick), installs it into its own virtual environment and runs
# test_tune_kernel.py and test_kernel_tuner_api.py (run_kernel, file_utils, … of Kernel Tuner's API) on kt's fake device: no GPU needed, but NVRTC compiles every configuration, so NVRTC
# comes from CUDA_HOME when it has one, else from NVIDIA's nvidia-cuda-nvrtc wheel installed into the venv.
# Then test_transform.py: kt.transform and kt.runs (to where a GPU is needed; with KT_GPU=1 to the end).
#   crates/kt-python/tests/run.sh            (scripts/test.sh runs it; PYTHON=... picks the interpreter)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=$(dirname "$here")
root=$(cd "$crate/../.." && pwd)
python=${PYTHON:-${KT_PYTHON:-python3}}
venv=$root/target/kt-python-venv

if [[ ! -x $venv/bin/python ]]; then
  "$python" -m venv "$venv"
fi
pip() { "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; }
numpy_version=$("$python" -c 'import numpy; print(numpy.__version__)' 2>/dev/null || echo "")
"$venv/bin/python" -c 'import numpy' 2>/dev/null || pip "numpy${numpy_version:+==$numpy_version}"
"$venv/bin/python" -c 'import maturin' 2>/dev/null || pip 'maturin>=1.9,<2'

nvrtc_dir=""
for d in "${CUDA_HOME:-}/lib64" "${CUDA_HOME:-}/lib"; do
  if compgen -G "$d/libnvrtc.so*" >/dev/null; then nvrtc_dir=$d; break; fi
done
if [[ -z $nvrtc_dir ]]; then
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if ! compgen -G "$site/nvidia/cu13/lib/libnvrtc.so*" >/dev/null; then
    echo "no NVRTC under CUDA_HOME: installing NVIDIA's nvidia-cuda-nvrtc 13.0 wheel into $venv"
    pip 'nvidia-cuda-nvrtc==13.0.*'
  fi
  nvrtc_dir=$site/nvidia/cu13/lib
fi

wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
(cd "$crate" && "$venv/bin/maturin" build --quiet -i "$venv/bin/python" -o "$wheels")
pip --force-reinstall --no-deps "$wheels"/kt-*.whl

cd "$wheels"   # not the source tree: `import kt` must find the installed package
LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KT_TUNER_FAKE_WORKER=ok \
  "$venv/bin/python" "$here/test_tune_kernel.py"
LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KT_TUNER_FAKE_WORKER=ok \
  "$venv/bin/python" "$here/test_kernel_tuner_api.py"
KT_REPO=$root "$venv/bin/python" "$here/test_transform.py"
