# Helpers of the hlb run CLI tests: $HLB is the binary, $D a scratch folder.
set -u
HLB=$1
D=$2
rm -rf "$D" && mkdir -p "$D"
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_rc RC CMD...: run CMD, fail unless it exits with RC.
expect_rc() {
  want=$1; shift
  "$@" >"$D/out" 2>"$D/err"; got=$?
  [ "$got" -eq "$want" ] || { cat "$D/out" "$D/err" >&2; fail "exit $got, expected $want: $*"; }
}
has() { grep -q -- "$1" "$2" || { cat "$2" >&2; fail "'$1' not in $2"; }; }
# OpenCL PUs when a device is there, else cpu only.
if "$HLB" run matmul --size 8 --pus opencl:0 >/dev/null 2>&1; then PUS="cpu:1,opencl:0"; CL=1
else PUS="cpu"; CL=0; fi
