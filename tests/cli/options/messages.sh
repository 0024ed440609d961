# One shape for every error: "hlb CMD: FILE[:LINE:COL]: what is wrong, got VALUE" on one line,
# no doubled prefix, no internal function name, the system's reason for a file.
. "$(dirname "$0")/lib.sh"
cluster="$SRC/docs/examples/cluster-small.json"
printf '{\n  "nodes": [1,,2]\n}\n' >"$D/bad.json"
printf '{"items": 10, "pus": [{"name": "a", "time": {"linear": -1}}]}\n' >"$D/negative.json"
check_shape() { # CMD: the last command's stderr is one line without a repeated prefix
  one_line "$1"
  if grep -qE "^hlb $1: ($1|hlb $1): " "$D/err"; then cat "$D/err" >&2; fail "doubled prefix"; fi
  if grep -qE 'hlb_[a-z0-9_]+: ' "$D/err"; then cat "$D/err" >&2; fail "internal function name"; fi
}
# A folder where a file is expected.
for cmd in plan sim partition fit report; do
  case $cmd in plan|sim) extra="--items 5" ;; *) extra="" ;; esac
  expect_rc 2 "$HLB" $cmd /tmp $extra
  check_shape $cmd
  has '/tmp: is a directory' "$D/err"
done
# A file that is not there: the system's reason.
for cmd in plan sim partition fit report; do
  case $cmd in plan|sim) extra="--items 5" ;; *) extra="" ;; esac
  expect_rc 2 "$HLB" $cmd "$D/absent.json" $extra
  check_shape $cmd
  has 'absent.json: cannot open: No such file or directory' "$D/err"
done
# Invalid JSON: file, line and column, everywhere.
for cmd in plan sim partition report; do
  case $cmd in plan|sim) extra="--items 5" ;; *) extra="" ;; esac
  expect_rc 2 "$HLB" $cmd "$D/bad.json" $extra
  check_shape $cmd
  grep -qE 'bad.json:2:[0-9]+: not valid JSON' "$D/err" || { cat "$D/err" >&2; fail "no line:column"; }
done
# Library errors reach the user without the library's module or function prefix.
expect_rc 2 "$HLB" partition "$D/negative.json"
check_shape partition
expect_rc 2 "$HLB" sim "$cluster" --items 10 --policy greedy --params chunk=-1
check_shape sim
has 'chunk' "$D/err"
has '\-1' "$D/err"
expect_rc 2 "$HLB" plan "$cluster" --items 5 --solver lp_solve
check_shape plan
has "got 'lp_solve'" "$D/err"
echo ok
