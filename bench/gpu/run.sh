#!/bin/sh
# bench/gpu/run.sh: the whole GPU benchmark, in one run on the GPU machine,
# from a build made elsewhere (build/luagpu links Lua statically).
#
#   make all build/bench_launch build/bench_clblast_sgemm     # here
#   sh bench/gpu/run.sh [OUTDIR]                              # there
#
# It registers the NVIDIA OpenCL driver with the ICD loader, unpacks
# CLBlast from a carried Debian package (.debs/libclblast1_*.deb), then runs
# every piece, each printing `LUAGPU|BASELINE|CLBLAST|CHOST key value unit`
# lines, and bench/gpu/report.lua sets them side by side in one table.
# Baselines are measured in the same run: PyTorch (cuBLAS, torch.sum, copy),
# CLBlast through the same OpenCL driver, and a C OpenCL host for launches.
set -u
cd "$(dirname "$0")/../.."
OUTDIR=${1:-${OUT:-/tmp/luagpu-bench}}
mkdir -p "$OUTDIR"
LOG="$OUTDIR/bench.log"
: > "$LOG"

# The NVIDIA driver's OpenCL library, registered for the ICD loader.
nv=$(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libnvidia-opencl.so.1' | head -1)
mkdir -p /tmp/icd
echo "${nv:-libnvidia-opencl.so.1}" > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
if [ -e build/gpulib/libOpenCL.so.1 ] && ! ldconfig -p | grep -q 'libOpenCL.so.1 '; then
  export LD_LIBRARY_PATH="$PWD/build/gpulib:${LD_LIBRARY_PATH:-}"
fi
for deb in .debs/libclblast1_*.deb; do
  [ -e "$deb" ] && dpkg -x "$deb" /tmp/clblast
done
export LD_LIBRARY_PATH="/tmp/clblast/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export LUAGPU_DEVICE=${LUAGPU_DEVICE:-gpu}
export PYTHONUNBUFFERED=1

step() {
  echo "== $*" | tee -a "$LOG"
  "$@" 2>&1 | tee -a "$LOG"
}

step build/luagpu --devices
step nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
step build/luagpu bench/gpu/bandwidth.lua 28 20
step build/luagpu bench/gpu/reduce_gpu.lua 20
step build/luagpu bench/gpu/matmul_gpu.lua
step build/luagpu bench/launch.lua
step build/luagpu bench/gpu/wallclock.lua 50
step build/luagpu bench/gpu/overhead.lua 300
step build/luagpu bench/transfer.lua 64 10
step build/luagpu examples/tour.lua
step python3 bench/gpu/torch_baseline.py
step build/luagpu bench/gpu/report.lua "$LOG" | tee "$OUTDIR/table.md"
