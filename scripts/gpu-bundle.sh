#!/usr/bin/env bash
# Carry a CUDA build to a GPU machine that has the NVIDIA driver, CUDA and cuBLAS but none of
# hlb's Debian dependencies (and no network to install them): the way the H100 runs of
# docs/benchmarks.md were made. Here, in a checkout built with CUDA (nvcc found):
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE]     (defaults: build, gpu-bundle.tar.xz)
#
# packs the hlb CLI, the apps' CUDA kernels, the CUDA tests and every shared library `ldd`
# lists for them (but the C and C++ runtimes and cuBLAS, which the GPU machine has) with jq.
# There, in a copy of the same checkout with the bundle in it:
#
#   scripts/gpu-bundle.sh --run [BUNDLE] [OUT_DIR]
#
# unpacks it under /tmp/hlb-gpu, points LD_LIBRARY_PATH at its libraries and the machine's
# cuBLAS, and runs scripts/gpu-check.sh on the unpacked build (its exit status). Environment as
# for gpu-check.sh (REPS, POLICIES, SIZE_matmul).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--run" ]; then
  bundle=${2:-gpu-bundle.tar.xz}
  out=${3:-/tmp/hlb-gpu/gpu-check}
  root=/tmp/hlb-gpu
  mkdir -p "$root"
  tar -C "$root" -xJf "$bundle"
  cublas=$(find /usr/local /opt /usr/lib -name 'libcublas.so.*' 2>/dev/null | head -1 || true)
  [ -n "$cublas" ] || { echo "gpu-bundle: no libcublas on this machine" >&2; exit 2; }
  cublas_dir=$(dirname "$cublas")
  export LD_LIBRARY_PATH="$root/build/lib:$root/build/apps:$root/build/tests/unit/exec:$cublas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$root/bin:$PATH"
  if ldd "$root/build/tools/hlb/hlb" | grep "not found"; then
    echo "gpu-bundle: libraries missing on this machine (above)" >&2
    exit 2
  fi
  exec scripts/gpu-check.sh "$root/build" "$out"
fi

build=${1:-build}
bundle=${2:-gpu-bundle.tar.xz}
bins=("$build/tools/hlb/hlb" "$build/tests/unit/exec/test_exec_cuda" "$build/tests/unit/apps/test_apps_cuda")
for b in "${bins[@]}" "$build/apps/libhlb_apps_cuda.so"; do
  [ -e "$b" ] || { echo "gpu-bundle: $b not built (configure with CUDA: nvcc must be found)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "gpu-bundle: needs jq (apt-get install jq)" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/tools/hlb" "$stage/build/lib" "$stage/build/apps" \
  "$stage/build/tests/unit/exec" "$stage/build/tests/unit/apps" "$stage/bin"
cp "$build/tools/hlb/hlb" "$stage/build/tools/hlb/"
cp "$build/apps/libhlb_apps_cuda.so" "$stage/build/apps/"
cp "$build/tests/unit/exec/test_exec_cuda" "$build"/tests/unit/exec/libhlb_test_cuda_kernels.so \
  "$stage/build/tests/unit/exec/"
cp "$build/tests/unit/apps/test_apps_cuda" "$stage/build/tests/unit/apps/"
cp "$(command -v jq)" "$stage/bin/"
# The libraries the GPU machine lacks: everything ldd resolves but the C/C++ runtimes (the
# machine's own must serve its driver) and cuBLAS (the machine's matches its driver).
for b in "${bins[@]}" "$(command -v jq)"; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libz|libdl|libpthread|librt|libcublas|libcublasLt)\.so' |
  grep -v -E 'libhlb_' | while read -r lib; do cp -L "$lib" "$stage/build/lib/"; done
tar -C "$stage" -cJf "$bundle" .
echo "gpu-bundle: $bundle ($(du -h "$bundle" | cut -f1)); on the GPU machine: scripts/gpu-bundle.sh --run $bundle"
