#!/usr/bin/env bash
# On the GPU machine (device tool: run(carry=[".gpu/site", ".gpu/cache.tar.xz", ".gpu/ptx",
# ".gpu/bench_compile.json"], command="bash scripts/gpu_run.sh [what]")):
# tritium from .gpu/site, kernels from the carried cache (.gpu/cache, or .gpu/cache.tar.xz unpacked; built by
# scripts/gpu_prepare.sh).
#   what: tests | bench | all (default)      results and logs go to $OUT (when set)
set -uo pipefail
cd "$(dirname "$0")/.."
CACHE="$PWD/.gpu/cache"
if [ ! -d "$CACHE" ] && [ -f .gpu/cache.tar.xz ]; then  # the compressed cache scripts/gpu_prepare.sh writes
  mkdir -p /tmp/tritium_gpu && tar -C /tmp/tritium_gpu -xJf .gpu/cache.tar.xz && CACHE=/tmp/tritium_gpu/cache
fi
export PYTHONPATH="$PWD/.gpu/site${PYTHONPATH:+:$PYTHONPATH}" TRITIUM_CACHE_DIR="$CACHE"
export PYTHONUNBUFFERED=1
unset TRITIUM_COMPILE_ONLY TRITIUM_TARGET
OUTDIR=${OUT:-/tmp/gpu_out}
mkdir -p "$OUTDIR"
WHAT=${1:-all}
PY=${PYTHON:-python3}
# this tree built for this machine's Python (its C extensions: the launch path); .gpu/site (pure Python, built
# where the tree was prepared) stays behind it for pytest and as the fallback when nothing can be built here
BUILT=/tmp/tritium_built_site
rm -rf "$BUILT"
if "$PY" -m pip install -q --no-deps --no-build-isolation --no-index --target "$BUILT" . 2>/dev/null; then
  export PYTHONPATH="$BUILT:$PYTHONPATH"
else
  echo "note: could not build tritium here (no setuptools?): the pure-Python .gpu/site is used" >&2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader || true
"$PY" -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
"$PY" -m tritium backends 2>&1 | head -5 || true
if [ "$WHAT" = tests ] || [ "$WHAT" = all ]; then
  "$PY" -m pytest -q -p no:cacheprovider tests/gpu -ra 2>&1 | tee "$OUTDIR/tests.log" | tail -40
fi
if [ "$WHAT" = bench ] || [ "$WHAT" = all ]; then
  "$PY" bench/gpu.py --json "$OUTDIR/bench.json" --compile-json .gpu/bench_compile.json 2>&1 | tee "$OUTDIR/bench.log"
fi
