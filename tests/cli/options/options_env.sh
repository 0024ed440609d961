# Every environment variable hlb reads is a row of the table, and precedence is flag, then
# environment, then default, the same for the CLI and the library.
. "$(dirname "$0")/lib.sh"
cd "$SRC" || fail "no source tree"
# Variables read in C (getenv) or in the scripts (${HLB_...}).
{
  grep -rhoE 'getenv\("HLB_[A-Z0-9_]+"\)' src tools apps examples | sed -E 's/getenv\("(.*)"\)/\1/'
  grep -rhoE '\$\{HLB_[A-Z0-9_]+' scripts | sed -E 's/\$\{//'
} | sort -u >"$D/read"
# Only the table's own module may call getenv for an HLB_ variable.
direct=$(grep -rlE --include='*.c' --include='*.h' 'getenv\("HLB_' src tools apps examples | grep -v '^src/common/options.c$')
[ -z "$direct" ] || fail "getenv(\"HLB_...\") outside src/common/options.c: $direct"
"$HLB" options | awk 'NR > 1 {print $2}' | grep '^HLB_' | sort -u >"$D/table"
missing=$(comm -23 "$D/read" "$D/table")
[ -z "$missing" ] || fail "read but not in the options table: $missing"
# The table lists the variables the library reads through it.
for v in HLB_POLICY HLB_POLICY_PARAMS HLB_REPART_POLICY HLB_SPMD_LOG; do
  grep -qx "$v" "$D/table" || fail "$v is not in the table"
done
# Precedence: flag over environment over default.
expect_rc 0 env HLB_POLICY=greedy "$HLB" run matmul --size 24 --pus cpu --json
has '"policy":[[:space:]]*"greedy"' "$D/out"
expect_rc 0 env HLB_POLICY=greedy "$HLB" run matmul --size 24 --pus cpu --policy static --json
has '"policy":[[:space:]]*"static"' "$D/out"
env -u HLB_POLICY "$HLB" run matmul --size 24 --pus cpu --json >"$D/out" 2>"$D/err" || fail "default run"
has '"policy":[[:space:]]*"hlb"' "$D/out"
# A bad value from the environment is named by its variable, in sim as in run.
expect_rc 2 env HLB_POLICY=nosuch "$HLB" run matmul --size 24 --pus cpu
one_line run
has 'HLB_POLICY' "$D/err"
expect_rc 2 env HLB_POLICY_PARAMS='chunk=-5' "$HLB" sim "$SRC/docs/examples/cluster-small.json" --items 100 --policy greedy
has 'chunk' "$D/err"
# --params reaches the policy in run as in sim.
expect_rc 2 "$HLB" run matmul --size 24 --pus cpu --policy greedy --params chunk=-5
has 'chunk' "$D/err"
expect_rc 0 "$HLB" run matmul --size 24 --pus cpu --policy greedy --params chunk=4 --json
has '"params":[[:space:]]*"chunk=4"' "$D/out"
has '"blocks":[[:space:]]*6' "$D/out"
echo ok
