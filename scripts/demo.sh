#!/usr/bin/env bash
# make demo: matrix multiplication on every device of this machine (cpu cores, OpenCL
# devices such as PoCL's, CUDA GPUs), balanced by hlb's default policy, checked against a
# reference. About 10 s of hlb's own run on this project's quiet 2-core machine (size 6144;
# 9.9 s measured on 2026-11-22); HLB_DEMO_SIZE changes it.
set -euo pipefail
build=${1:-build}
size=${HLB_DEMO_SIZE:-6144}
hlb="$build/tools/hlb/hlb"
echo "== hlb run matmul --size $size --pus all"
"$hlb" run matmul --size "$size" --pus all --trace "$build/demo-trace.json"
"$hlb" report "$build/demo-trace.json" -o "$build/demo-report.html"
echo "trace: $build/demo-trace.json (chrome://tracing, Perfetto); report: $build/demo-report.html"
