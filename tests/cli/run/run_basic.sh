# Every app verifies from the CLI; --json has the documented fields; --compare adds greedy
# and static makespans.
. "$(dirname "$0")/lib.sh"
for app in matmul:64 blackscholes:5000 kmeans:5000 mandelbrot:64; do
  expect_rc 0 "$HLB" run "${app%%:*}" --size "${app##*:}" --pus "$PUS" --json
  for k in '"app":' '"policy":' '"verified":	true' '"makespan_s":' '"imbalance_pct":' \
           '"pus":' '"name":' '"kind":' '"items":' '"blocks":' '"busy_pct":'; do
    has "$k" "$D/out"
  done
done
expect_rc 0 "$HLB" run blackscholes --size 5000 --pus "$PUS" --policy greedy --compare --json
has '"compare":' "$D/out"
has '"greedy_s":' "$D/out"
has '"static_s":' "$D/out"
has '"policy":	"greedy"' "$D/out"
expect_rc 0 "$HLB" run mandelbrot --size 64 --pus "$PUS"
has 'result: verified against the reference' "$D/out"
has 'makespan' "$D/out"
has 'imbalance' "$D/out"
echo ok
