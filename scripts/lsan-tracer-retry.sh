#!/usr/bin/env bash
# Runs a test once more when, and only when, LeakSanitizer itself crashed at exit.
#
#   scripts/lsan-tracer-retry.sh TEST_BINARY [ARGS...]
#
# The sanitizer build's unit tests run through this (cmake/HlbHelpers.cmake, hlb_add_test). At
# exit, LeakSanitizer stops every thread with a tracer to scan their stacks and TLS; with PoCL's
# worker threads alive and its kernels dlopen'ed, that tracer itself sometimes dies ("Tracer
# caught signal 11 ... LeakSanitizer has encountered a fatal error"), after every test of the
# binary passed: a known fault of the sanitizer runtime (google/sanitizers#1353, #1342), not a
# leak or a finding about hlb. Seen once in two fresh-machine runs of test_exec_opencl
# (2026-11-29), never in 8 runs here. Any other failure, a leak report included, is returned as
# it is, and a second tracer crash fails the test.
set -u
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && grep -q 'Tracer caught signal' "$out" &&
  grep -q 'LeakSanitizer has encountered a fatal error' "$out"; then
  echo "lsan-tracer-retry: LeakSanitizer's tracer crashed at exit (a sanitizer fault); running once more" >&2
  "$@"
  rc=$?
fi
exit "$rc"
