#!/usr/bin/env bash
# Build .gpu/ for a run on the lent GPU machine (see README "Running on a GPU").
#
# The GPU machine has Python 3.12, torch, triton, cuda-bindings, numpy and pluggy but not MLIR/llvmlite, and
# tritium is not installed there.  So, here:
#   .gpu/site   tritium installed with `pip install --no-deps --target` (pure Python + the dist-info whose entry
#               points register the backends): put on PYTHONPATH there
#   .gpu/cache  the kernel file cache (TRITIUM_CACHE_DIR), filled by running the GPU tests and the GPU
#               benchmark in compile-only mode (TRITIUM_COMPILE_ONLY=1 TRITIUM_TARGET=cuda:90): every kernel
#               they launch is compiled for sm_90, nothing is launched
#               and the README example's kernel (examples/vector_add.py)
#   .gpu/ptx    the hand-written PTX test kernels assembled by ptxas (tests/gpu/test_launcher_ptx.py)
#   .gpu/bench_compile.json   tritium's cold compile time of vector add, measured here (bench/gpu.py)
#
#   .gpu/cache.tar.xz         the cache, compressed: carry it instead of .gpu/cache
#
# Then, with the device tool:
#   run(carry=[".gpu/site", ".gpu/cache.tar.xz", ".gpu/ptx", ".gpu/bench_compile.json"],
#       command="bash scripts/gpu_run.sh")
#
# Usage: scripts/gpu_prepare.sh [--arch 90] [--skip-tests] [--skip-bench]
#   PYTHON  the interpreter with tritium's dependencies (default: python3); needs torch (CPU) for the tests
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
ARCH=90
TESTS=1
BENCH=1
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCH=$2; shift ;;
    --skip-tests) TESTS=0 ;;
    --skip-bench) BENCH=0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
GPU=.gpu
mkdir -p "$GPU"
echo "== site: pip install --no-deps --target $GPU/site"
rm -rf "$GPU/site"
"$PY" -m pip install -q --no-deps --no-compile --target "$GPU/site" . || exit 1
# pytest for the device (pure Python; the GPU image may not have it), beside tritium
"$PY" -m pip install -q --no-deps --no-compile --upgrade --target "$GPU/site" pytest iniconfig packaging pygments || exit 1
rm -rf "$GPU/site/bin"

echo "== ptx: assembling tests/gpu/ptx/*.ptx for sm_$ARCH"
mkdir -p "$GPU/ptx"
PTXAS=${PTXAS:-$("$PY" - <<'PY'
import os, shutil
c = [shutil.which("ptxas")]
try:
    import nvidia.cu13, pathlib
    c.insert(0, str(pathlib.Path(nvidia.cu13.__path__[0]) / "bin" / "ptxas"))
except Exception:
    pass
print(next((x for x in c if x and os.path.exists(x)), ""))
PY
)}
if [ -n "$PTXAS" ]; then
  for f in tests/gpu/ptx/*.ptx; do
    "$PTXAS" -arch=sm_$ARCH "$f" -o "$GPU/ptx/$(basename "${f%.ptx}").cubin" || exit 1
  done
else
  echo "   no ptxas: the PTX tests will assemble on the device"
fi

export PYTHONPATH="$PWD/$GPU/site${PYTHONPATH:+:$PYTHONPATH}"
export TRITIUM_CACHE_DIR="$PWD/$GPU/cache" TRITIUM_COMPILE_ONLY=1 TRITIUM_TARGET=cuda:$ARCH
mkdir -p "$TRITIUM_CACHE_DIR"
status=0
if [ $TESTS = 1 ]; then
  echo "== cache: compiling the GPU tests' kernels (compile only)"
  "$PY" -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tail -5
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "   some kernels did not compile (see above)"; status=1; }
fi
echo "== cache: compiling examples/vector_add.py's kernel for CUDA tensors (compile only)"
"$PY" - <<'PY' || status=1
import sys
sys.path.insert(0, "examples")
import torch
import vector_add  # its add() launches on whatever tensors it gets: CPU tensors stand in for CUDA ones
vector_add.add(torch.rand(98432), torch.rand(98432))
PY
if [ $BENCH = 1 ]; then
  echo "== cache: compiling the benchmark's kernels (compile only) and timing a cold compile here"
  "$PY" bench/gpu.py --compile-only --json "$GPU/bench_compile.json" || status=1
fi
echo "== cache: compressing to $GPU/cache.tar.xz (carry it instead of $GPU/cache)"
tar -C "$GPU" -cJf "$GPU/cache.tar.xz" cache || status=1
echo "== carry: $(du -shc "$GPU/site" "$GPU/cache.tar.xz" "$GPU/ptx" | tail -1 | cut -f1) (a device call carries at most 64 MiB)"
exit $status
