# The same class of mistake gives the same exit status in every command: 2 for bad usage, bad
# input and output that cannot be written (checked before any work), 1 for a run that failed.
. "$(dirname "$0")/lib.sh"
cluster="$SRC/docs/examples/cluster-small.json"
printf '{"nodes": [,]}\n' >"$D/bad.json"
printf 'pu,items,compute_s\ncpu,10,nan\ncpu,20,nan\n' >"$D/unfittable.csv"
printf 'pu,items\n' >"$D/bad.csv"
printf '{"items": 10, "pus": [{"name": "a", "time": {"linear": 1}}]}\n' >"$D/models.json"
# A cluster whose only PU dies at once: the simulated run cannot finish.
cat >"$D/dying.json" <<'JSON'
{"item": {"in_bytes": 8, "out_bytes": 8},
 "nodes": [{"name": "n", "link": {"latency_s": 1e-6, "bandwidth_Bps": 1e9},
            "pus": [{"name": "p", "kind": "cpu", "link": {"latency_s": 1e-6, "bandwidth_Bps": 1e9},
                     "time": {"linear": 1}}]}],
 "events": [{"at_s": 0.5, "pu": "p", "fail": true}]}
JSON

# Bad usage: an unknown option, in every command.
for cmd in $("$HLB" --help | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
  expect_rc 2 "$HLB" "$cmd" --no-such-option
  one_line "$cmd"
  has "unknown option '--no-such-option'" "$D/err"
done
expect_rc 2 "$HLB" no-such-command
expect_rc 2 "$HLB" version extra
expect_rc 2 "$HLB" plan "$cluster"            # a required flag missing
expect_rc 2 "$HLB" sim "$cluster" --items      # a flag without its value
has 'needs a value' "$D/err"
expect_rc 2 "$HLB" run matmul --size 16 --size 32
has 'given twice' "$D/err"

# Bad input: malformed files, values out of range, names that do not exist.
expect_rc 2 "$HLB" plan "$D/bad.json" --items 5
expect_rc 2 "$HLB" sim "$D/bad.json" --items 5
expect_rc 2 "$HLB" partition "$D/bad.json"
expect_rc 2 "$HLB" report "$D/bad.json" -o "$D/r.html"
expect_rc 2 "$HLB" fit "$D/bad.csv"
expect_rc 2 "$HLB" run matmul --size 1
expect_rc 2 "$HLB" run nosuchapp
expect_rc 2 "$HLB" policies nosuchpolicy
expect_rc 2 "$HLB" run matmul --size 16 --pus cpu:0
has 'cpu:0' "$D/err"
# --items 0 is refused alike by every command that takes --items.
for cmd in plan sim partition; do
  file=$cluster
  [ "$cmd" = partition ] && file="$D/models.json"
  expect_rc 2 "$HLB" $cmd "$file" --items 0
  one_line "$cmd"
  has "\-\-items" "$D/err"
done

# Output that cannot be written: refused before the run (nothing on stdout).
expect_rc 2 "$HLB" run matmul --size 16 --pus cpu --trace /tmp
has 'is a directory' "$D/err"
[ ! -s "$D/out" ] || fail "hlb run printed results although its trace could not be written"
expect_rc 2 "$HLB" sim "$cluster" --items 100 --trace /tmp
has 'is a directory' "$D/err"
[ ! -s "$D/out" ] || fail "hlb sim printed results although its trace could not be written"
expect_rc 2 "$HLB" run matmul --size 16 --pus cpu --trace /nonexistent-folder/t.json
has 'No such file or directory' "$D/err"
printf '{"traceEvents": []}\n' >"$D/empty-trace.json"
expect_rc 2 "$HLB" report "$D/empty-trace.json" -o /tmp
has 'is a directory' "$D/err"

# A run that failed: 1.
expect_rc 1 "$HLB" run matmul --size 64 --pus cpu --inject cpu:1:0
expect_rc 1 "$HLB" fit "$D/unfittable.csv"
expect_rc 1 "$HLB" sim "$D/dying.json" --items 100 --no-noise
echo ok
