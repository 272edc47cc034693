#!/usr/bin/env bash
# Source on the GPU machine (after the MLIR and llvmlite wheels were installed into /tmp/dsite, see the README's
# "Running on a GPU"): libLLVM.so from .wh3, this tree installed into /tmp/tsite (and, with OLD=dir, that tree
# into /tmp/tsite_old), ptxas and libdevice from the installed triton; then kernels compile there, as for a user.
#   source scripts/gpu_jit_env.sh
if [ ! -s /tmp/dsite/llvm/lib/libLLVM.so ]; then  # (-s: a call without .wh3 must not leave an empty file)
  mkdir -p /tmp/dsite/llvm/lib && xz -dc .wh3/libLLVM.so.xz > /tmp/libLLVM.so.part \
    && mv /tmp/libLLVM.so.part /tmp/dsite/llvm/lib/libLLVM.so || echo "libLLVM.so: carry .wh3"
fi
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --no-index --target /tmp/tsite . || echo "tritium install failed"
# /tmp/tsite is on PYTHONPATH, not a site directory: have Python read its .pth files (tritium-as-triton.pth, the
# TRITIUM_AS_TRITON start-up hook that Inductor's compile workers need) as site-packages' are
printf 'import site\nsite.addsitedir("/tmp/tsite")\n' > /tmp/tsite/sitecustomize.py
if [ -n "${OLD:-}" ]; then
  (cd "$OLD" && python3 -m pip install -q --no-deps --no-build-isolation --no-index --upgrade --target /tmp/tsite_old .)
fi
TR=$(python3 -c "import triton, os; print(os.path.dirname(triton.__file__))")
export TRITIUM_PTXAS_PATH=$TR/backends/nvidia/bin/ptxas
export TRITIUM_LIBDEVICE_PATH=$(ls "$TR"/backends/nvidia/lib/libdevice*.bc | head -1)
export PYTHONPATH=/tmp/tsite:/tmp/dsite PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
