#!/usr/bin/env bash
# Install the Debian packages hlb needs, only those missing. Used by `make demo` and `make test`.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcjson-dev          # JSON files
  liblapacke-dev liblapack-dev libopenblas-dev  # least squares, matmul on CPU
  libglpk-dev           # MILP for the two-level assignment
  libhwloc-dev          # CPU topology
  libudev-dev           # hwloc's private library: a static link against libhlb.a needs it
  libcmocka-dev         # unit tests
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd  # OpenCL, PoCL's CPU device
  libopenmpi-dev openmpi-bin  # MPI layer
  coinor-libipopt-dev   # benchmark baseline (PLB-HeC's solver)
  libstarpu-dev         # libhlb_starpu (HLB_WITH_STARPU); StarPU baselines in bench/exec, bench/starpu
  libpapi-dev           # hardware counters of the SPMD monitor (libhlb_mpi)
  jq                    # CLI tests parse --json output
  python3               # CLI and MPI tests check JSON and numbers with short scripts
  libjs-chart.js        # hlb report: Chart.js, inlined into the page at build time
  chromium              # hlb report tests render the pages headless (--dump-dom)
  clang libclang-rt-14-dev libomp-14-dev  # libFuzzer targets (tests/fuzz, make test-fuzz); clang's OpenMP
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
