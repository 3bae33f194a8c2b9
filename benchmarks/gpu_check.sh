#!/usr/bin/env bash
# The GPU checks, in a few minutes: the tests marked `gpu` (compiler_tests/
# test_backends.py: CuPy gradients of the MLP loss, the elementwise chain and
# the indexed loop stay on the device and equal NumPy's; test_lower_broadcasts.py:
# CuPy arrays reach the fused JAX kernels through DLPack without a copy) and
# the timings of a fused kernel on CuPy arrays; test_jit.py again, where JAX's
# default device is the GPU (pullback's derivatives under jax.jit).  Fails if
# any gpu test is skipped.
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
# a skipped gpu test here means the GPU was not usable: the check fails
log="$(mktemp)"
timeout 300 "$PY" -m pytest compiler_tests -m gpu -q -rs -p no:cacheprovider | tee "$log"
if grep -q "skipped" "$log"; then
    echo "gpu_check: some gpu tests were skipped (see the reasons above)"; exit 1
fi

echo "== pullback under jax.jit on the GPU (JAX's default device)"
timeout 300 "$PY" -m pytest compiler_tests/test_jit.py -q -p no:cacheprovider

echo "== timings"
PULLBACK_CACHE=0 XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 300 "$PY" benchmarks/elementwise.py --gpu
