#!/usr/bin/env bash
# What a machine with an NVIDIA GPU checks that CI cannot (CI has no GPU, so there the CUDA
# tests skip with 77): the cuda backend's tests, every app verified on cuda:0 alone and on
# every local PU, and bench/apps/bench_apps.sh with the GPU in the PU sets.
#
#   scripts/gpu-check.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, BUILD_DIR/gpu-check)
#
# BUILD_DIR is a build configured with CUDA (HLB_WITH_CUDA=AUTO finds nvcc). Environment:
# REPS (bench repetitions, default 3), POLICIES (default "hlb greedy static"), SIZE_<app> as
# for bench_apps.sh (matmul defaults to 4096 here: at 1536 a GPU's run is a few milliseconds of
# kernels beside its set-up). Writes each step's output under OUT_DIR; exits 1 when a test or a
# verification failed, after running every step.
set -uo pipefail
build=${1:-build}
out=${2:-$build/gpu-check}
hlb="$build/tools/hlb/hlb"
mkdir -p "$out"
status=0
step() { echo "== $*"; }

step "devices"
nvidia-smi -L || { echo "gpu-check: nvidia-smi found no GPU" >&2; exit 2; }
echo "cores: $(nproc)"

for t in exec/test_exec_cuda apps/test_apps_cuda; do
  step "$t"
  bin="$build/tests/unit/$t"
  [ -x "$bin" ] || { echo "gpu-check: $bin not built (configure with CUDA)"; status=1; continue; }
  timeout 600 "$bin" >"$out/$(basename "$t").log" 2>&1
  rc=$?
  tail -n 15 "$out/$(basename "$t").log"
  [ $rc -eq 0 ] || { echo "gpu-check: $t exited $rc"; status=1; }
done

export HLB_MODEL_DIR="$out/models"
apps=$("$hlb" run --help | awk '/size = / {print $1}')
for a in $apps; do
  for pus in cuda:0 all; do
    step "hlb run $a --pus $pus"
    size=()
    [ "$a" != matmul ] || size=(--size "${SIZE_matmul:-4096}")
    "$hlb" run "$a" "${size[@]}" --pus "$pus" >"$out/run-$a-${pus%%:*}.txt" 2>&1
    rc=$?
    cat "$out/run-$a-${pus%%:*}.txt"
    [ $rc -eq 0 ] || { echo "gpu-check: hlb run $a --pus $pus exited $rc"; status=1; }
  done
done

step "bench_apps"
rm -rf "$HLB_MODEL_DIR"
SIZE_matmul=${SIZE_matmul:-4096} PUSETS="all cpu cuda:0" POLICIES=${POLICIES:-hlb greedy static} \
  REPS=${REPS:-3} OUT="$out/bench_apps.tsv" bench/apps/bench_apps.sh "$build" ||
  { echo "gpu-check: bench_apps failed"; status=1; }
exit $status
