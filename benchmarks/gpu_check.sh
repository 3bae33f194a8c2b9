#!/usr/bin/env bash
# The GPU checks, in a few minutes: the tests marked `gpu` (compiler_tests/
# test_backends.py: CuPy gradients of the MLP loss, the elementwise chain and
# the indexed loop stay on the device and equal NumPy's; test_lower_broadcasts.py:
# CuPy arrays reach the fused JAX kernels through DLPack without a copy) and
# the timings of a fused kernel on CuPy arrays; test_jit.py again, where JAX's
# default device is the GPU (pullback's derivatives under jax.jit).  Fails,
# with a message, if any gpu test is skipped or fewer than all of them pass.
#
# Needs, in the virtual environment: CuPy (pip install 'pullback[gpu]', or
# cupy-cuda12x) and, for the fused kernels, a CUDA build of JAX
# (pip install "jax[cuda12]").  Run from anywhere:
#     bash benchmarks/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"

"$PY" - <<'PYEOF'
import sys
try:
    import cupy
    import jax
except ImportError as err:
    sys.exit(f"gpu_check: {err}; install cupy-cuda12x and jax[cuda12] first")
print("cupy", cupy.__version__, "available:", cupy.is_available())
print("jax", jax.__version__, "devices:", jax.devices())
if not cupy.is_available():
    sys.exit("gpu_check: no GPU visible to CuPy")
if not any(d.platform == "gpu" for d in jax.devices()):
    print("gpu_check: JAX sees no GPU: the fused-kernel test and timings will skip or fail")
PYEOF

echo "== tests marked gpu"
# every gpu test must run and pass: a skipped one means the GPU was not
# usable, none collected means the marker or the files moved; both fail
expected=7          # test_backends.py: 6, test_lower_broadcasts.py: 1
log="$(mktemp)"
set +e
timeout 300 "$PY" -m pytest compiler_tests -m gpu -rs -p no:cacheprovider 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
passed="$(grep -Eo '[0-9]+ passed' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)"
if grep -Eq "[0-9]+ skipped|^SKIPPED" "$log"; then
    echo "gpu_check: FAILED: some gpu tests were skipped (reasons above)" >&2; exit 1
fi
if [ "$rc" -ne 0 ] || [ "$passed" -lt "$expected" ]; then
    echo "gpu_check: FAILED: pytest exit status $rc, $passed of $expected gpu tests passed" >&2
    exit 1
fi

echo "== pullback under jax.jit on the GPU (JAX's default device)"
timeout 400 "$PY" -m pytest compiler_tests/test_jit.py compiler_tests/test_jit_linalg.py \
    compiler_tests/test_jit_jvp.py -p no:cacheprovider

echo "== timings"
PULLBACK_CACHE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 300 "$PY" benchmarks/elementwise.py --gpu
echo "gpu_check: passed ($passed gpu tests)"
