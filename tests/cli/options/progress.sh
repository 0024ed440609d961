# Long work shows a progress line on stderr when it is a terminal, and nothing changes when the
# output goes to a pipe or a file, or with --json or --quiet.
. "$(dirname "$0")/lib.sh"
cluster="$SRC/docs/examples/cluster-small.json"
command -v script >/dev/null || { echo "script(1) (util-linux) is missing" >&2; exit 1; }
# Under a pseudo-terminal (script(1) gives the command one; its output is the terminal's).
on_tty() { script -qec "$*" /dev/null >"$D/tty" 2>&1 </dev/null; }

on_tty "'$HLB' run matmul --size 256 --pus cpu"
has 'items (' "$D/tty"
has 'blocks' "$D/tty"
on_tty "'$HLB' sim '$cluster' --items 1000 --policy all"
has 'hlb sim: policy 1/' "$D/tty"
# Not with --json or --quiet, even on a terminal.
on_tty "'$HLB' run matmul --size 256 --pus cpu --json"
hasnt 'items (' "$D/tty"
on_tty "'$HLB' run matmul --size 256 --pus cpu --quiet"
hasnt 'items (' "$D/tty"
on_tty "'$HLB' sim '$cluster' --items 1000 --policy all --quiet"
hasnt 'hlb sim: policy' "$D/tty"
# Not on a pipe or a file: stderr stays empty.
expect_rc 0 "$HLB" run matmul --size 256 --pus cpu
[ ! -s "$D/err" ] || { cat "$D/err" >&2; fail "hlb run wrote to stderr without a terminal"; }
head -1 "$D/out" | grep -q '^hlb run matmul: size 256' || fail "the header is not the first line"
expect_rc 0 "$HLB" sim "$cluster" --items 1000 --policy all
[ ! -s "$D/err" ] || { cat "$D/err" >&2; fail "hlb sim wrote to stderr without a terminal"; }
echo ok
