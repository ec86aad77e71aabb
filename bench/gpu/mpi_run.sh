#!/bin/sh
# bench/gpu/mpi_run.sh: luagpu.mpi's allreduce beside NCCL's on the GPUs of
# one host, on a machine with no Open MPI, no Lua and no network: Open MPI
# comes from Debian packages carried in debs/ (untracked: `apt-get download`
# them, see below), unpacked with dpkg -x (or Python, without dpkg) into
# /tmp/ompi and run from there (OPAL_PREFIX: Open MPI moved from /usr).
#
#   sh bench/gpu/mpi_run.sh [LOG2_SIZES [REPS [CHUNKS_KIB]]]
#     defaults: 20,22,24,26,28  5  1024,4096,16384 (bench/gpu/mpi_allreduce.lua)
#   env: OUT (where the tables go, else /tmp/luagpu-mpi), NP (ranks, 2),
#        DEBS (the .deb folder, debs), OMPI_ROOT (where they unpack, /tmp/ompi),
#        SKIP_NCCL=1 (no torch run), CPU=1 (PoCL or any OpenCL: no NVIDIA ICD)
#
# The packages (Debian 12, Open MPI 4.1.4; libopenmpi3's plugins need them):
#   apt-get download openmpi-bin libopenmpi3 openmpi-common libpmix2 \
#     libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libhwloc15 \
#     libfabric1 libucx0 libibverbs1 ibverbs-providers librdmacm1 libpsm2-2 \
#     libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libmunge2 libnuma1 \
#     libatomic1 libudev1 libxnvctrl0
# It needs build/luagpu and build/luagpu_mpi.so (made with `make all` where
# libopenmpi-dev is installed).
set -u
cd "$(dirname "$0")/../.."
OUTDIR=${OUT:-/tmp/luagpu-mpi}
NP=${NP:-2}
DEBS=${DEBS:-debs}
ROOT=${OMPI_ROOT:-/tmp/ompi}
mkdir -p "$OUTDIR" "$ROOT"
LOG="$OUTDIR/mpi_run.log"
: > "$LOG"
say() { echo "$*" | tee -a "$LOG"; }

# --- Open MPI, unpacked
if [ ! -x "$ROOT/usr/bin/orterun" ]; then
  found=0
  for deb in "$DEBS"/*.deb; do
    [ -e "$deb" ] || continue
    found=1
    if command -v dpkg >/dev/null 2>&1; then
      dpkg -x "$deb" "$ROOT"
    else   # a .deb is an ar archive holding data.tar.*
      python3 - "$deb" "$ROOT" <<'EOF'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        if name.endswith(".zst"):
            sys.exit("mpi_run.sh: %s: zstd data and no dpkg" % sys.argv[1])
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
EOF
    fi
  done
  if [ "$found" = 0 ]; then
    say "mpi_run.sh: no .deb files in $DEBS (see the list at the top of this script)"
    exit 1
  fi
fi
ORIG_LD=${LD_LIBRARY_PATH:-}
M="$ROOT/usr"
L="$M/lib/x86_64-linux-gnu"
ln -sf orterun "$M/bin/mpirun"
export OPAL_PREFIX="$M"
export OPAL_SYSCONFDIR="$ROOT/etc/openmpi"
export PMIX_PREFIX="$L/pmix2" PMIX_LIBDIR="$L/pmix2/lib" PMIX_PKGLIBDIR="$L/pmix2/lib/pmix"
export PMIX_DATADIR="$L/pmix2/share" PMIX_PKGDATADIR="$L/pmix2/share/pmix"
export PATH="$M/bin:$PATH"
# the Debian layout: libmpi and its plugins' own libraries, PMIx, libfabric, UCX
MPI_LD="$L/openmpi/lib:$L:$L/pmix2/lib:$L/libfabric:$L/ucx"
export LD_LIBRARY_PATH="$MPI_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# plugins whose hardware (InfiniBand, PSM, OFI) is absent stay quiet
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# --- OpenCL: the NVIDIA driver registered with the ICD loader
if [ -z "${CPU:-}" ]; then
  nv=$(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libnvidia-opencl.so.1' | head -1)
  mkdir -p /tmp/icd
  echo "${nv:-libnvidia-opencl.so.1}" > /tmp/icd/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/icd
  # the ranks got OCL_ICD_FILENAMES=libpocl.so.2 from somewhere in mpirun's
  # launch (the ICD loader then loads that alone, not the vendors folder):
  # name NVIDIA's library there, and hand both to every rank (-x)
  export OCL_ICD_FILENAMES="${nv:-libnvidia-opencl.so.1}"
fi
MPIRUN_X="-x OCL_ICD_VENDORS -x OCL_ICD_FILENAMES -x LUAGPU_DEVICE"
[ -n "${OCL_ICD_FILENAMES:-}" ] || MPIRUN_X="-x LUAGPU_DEVICE"
export LUAGPU_DEVICE=${LUAGPU_DEVICE:-}
if [ -e build/gpulib/libOpenCL.so.1 ] && ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1 '; then
  export LD_LIBRARY_PATH="$PWD/build/gpulib:$LD_LIBRARY_PATH"
fi
export LUAGPU_BUILD="$PWD/build"

say "== $(mpirun --version 2>&1 | head -1), $NP ranks"
# what each rank's OpenCL sees (a rank that finds no GPU benches the CPU)
say "== OpenCL: OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-unset}; /etc/OpenCL/vendors: $(ls /etc/OpenCL/vendors 2>/dev/null | tr '\n' ' ')"
say "outside mpirun: $(build/luagpu -e 'for _, d in ipairs(gpu.devices()) do io.write(d.name, "; ") end' 2>&1)"
say "in a rank: $(mpirun $MPIRUN_X -np 1 env 2>&1 | grep -E '^(OCL_|LD_LIBRARY_PATH)' | tr '\n' ' ')"
mpirun $MPIRUN_X -np "$NP" build/luagpu -e 'local mpi = require "luagpu.mpi"
  for _, d in ipairs(gpu.devices()) do print(("rank %d sees %s (%s)"):format(mpi.rank, d.name, d.type)) end' \
  2>&1 | tee -a "$LOG"
# Shared memory between the ranks: single copies (CMA) where the kernel
# allows them, else through the shared segment.
if ! mpirun -np 2 true >/dev/null 2>&1; then
  say "mpi_run.sh: mpirun does not start:"
  mpirun -np 2 true 2>&1 | tee -a "$LOG"
  exit 1
fi
probe=$(mktemp /tmp/mpi_probe.XXXXXX.lua)
cat > "$probe" <<'EOF'
local gpu = require "luagpu"
local mpi = require "luagpu.mpi"
local a = gpu.array("float", 1 << 20):fill(1)
local s = mpi.allreduce(a, "sum")
if mpi.rank == 0 then print("probe " .. s[1]) end
EOF
if ! mpirun $MPIRUN_X -np "$NP" build/luagpu "$probe" 2>&1 | grep -q "probe $NP"; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  say "(no CMA single copies between the ranks here: btl_vader_single_copy_mechanism=none)"
  mpirun $MPIRUN_X -np "$NP" build/luagpu "$probe" 2>&1 | tee -a "$LOG" | grep -q "probe $NP" || {
    say "mpi_run.sh: a 2-rank allreduce fails:"; mpirun $MPIRUN_X -np "$NP" build/luagpu "$probe" 2>&1 | tee -a "$LOG"; exit 1; }
fi
rm -f "$probe"

say "== mpirun -np $NP build/luagpu bench/gpu/mpi_allreduce.lua $*"
OUT="$OUTDIR" mpirun $MPIRUN_X -np "$NP" --bind-to none build/luagpu bench/gpu/mpi_allreduce.lua "$@" 2>&1 \
  | tee -a "$LOG"
if [ -z "${SKIP_NCCL:-}" ]; then
  say "== python3 bench/gpu/nccl_allreduce.py ${1:-} ${2:-}"
  # Open MPI's libraries stay out of torch's way
  env LD_LIBRARY_PATH="$ORIG_LD" OUT="$OUTDIR" \
    python3 bench/gpu/nccl_allreduce.py "${1:-20,22,24,26,28}" "${2:-5}" "$NP" 2>&1 | tee -a "$LOG"
fi

# --- one table: each row of either, then busbw as a fraction of NCCL's
python3 - "$OUTDIR" <<'EOF' | tee "$OUTDIR/mpi_vs_nccl.md"
import os, sys
d = sys.argv[1]
rows, nccl = [], {}
for name in ("mpi_allreduce.txt", "nccl_allreduce.txt"):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        continue
    for line in open(p):
        if line.startswith("#") or line.startswith("method"):
            continue
        parts = line.split()
        n = len(parts)
        method, (floats, mib, ms, alg, bus) = " ".join(parts[:n - 5]), parts[n - 5:]
        rows.append((int(floats), name.startswith("nccl"), method, mib, ms, alg, bus))
        if method == "nccl":
            nccl[int(floats)] = float(bus)
print("| floats | MiB | method | time ms | algbw GB/s | busbw GB/s | busbw / NCCL's |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for floats, _, method, mib, ms, alg, bus in sorted(rows, key=lambda r: (r[0], not r[1])):
    ratio = "-"
    if bus != "-" and nccl.get(floats):
        ratio = "%.4f" % (float(bus) / nccl[floats])
    print(f"| 2^{floats.bit_length() - 1} | {mib} | {method} | {ms} | {alg} | {bus} | {ratio} |")
EOF
