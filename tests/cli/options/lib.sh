# Helpers of the options tests: $HLB the binary, $SRC the source tree, $D a scratch folder.
set -u
HLB=$1
SRC=$2
D=$3
rm -rf "$D" && mkdir -p "$D"
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_rc RC CMD...: run CMD, fail unless it exits with RC; stdout in $D/out, stderr in $D/err.
expect_rc() {
  want=$1; shift
  "$@" >"$D/out" 2>"$D/err" </dev/null; got=$?
  [ "$got" -eq "$want" ] || { cat "$D/out" "$D/err" >&2; fail "exit $got, expected $want: $*"; }
}
has() { grep -q -- "$1" "$2" || { cat "$2" >&2; fail "'$1' not in $2"; }; }
hasnt() { ! grep -q -- "$1" "$2" || { cat "$2" >&2; fail "'$1' in $2"; }; }
# one_line: stderr is exactly one line, "hlb CMD: ..."
one_line() {
  [ "$(wc -l <"$D/err")" -eq 1 ] || { cat "$D/err" >&2; fail "stderr is not one line"; }
  has "^hlb $1: " "$D/err"
}
