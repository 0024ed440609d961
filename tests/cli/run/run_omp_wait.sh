# hlb run's OpenMP kernels run under OMP_WAIT_POLICY=passive unless the user set the variable:
# hlb sets it and execs itself again (tools/hlb/main.c, rerun_with_passive_omp_wait_policy).
# With OMP_DISPLAY_ENV=verbose libgomp prints its settings on stderr each time it is loaded, so
# the blocks count the programs the command was (2 after the exec) and the last block is what
# the kernels ran under. libgomp prints its default (spinning) as OMP_WAIT_POLICY = 'PASSIVE'
# too; GOMP_SPINCOUNT tells them apart: 0 for passive, 300000 for the default.
. "$(dirname "$0")/lib.sh"
PRESETS="$(dirname "$0")/../../../presets"
blocks() { grep -c 'OPENMP DISPLAY ENVIRONMENT BEGIN' "$D/err"; }
last() { awk -F"'" -v k="  $1 = " 'index($0, k) == 1 { v = $2 } END { print v }' "$D/err"; }
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$D/out" "$1"; }
KM="run kmeans --size 1000 --pus cpu --json"
export OMP_DISPLAY_ENV=verbose
expect_rc 0 env -u OMP_WAIT_POLICY "$HLB" version
[ "$(blocks)" -ge 1 ] || { echo "no OMP_DISPLAY_ENV block: not libgomp, skipped"; exit 77; }
[ "$(blocks)" -eq 1 ] || fail "hlb version ran $(blocks) times"
SPIN=0
[ -n "$(last GOMP_SPINCOUNT)" ] && SPIN=1 # libgomp before 4.9 does not print it

# (1) Unset: executed again with passive, and --json says so.
expect_rc 0 env -u OMP_WAIT_POLICY "$HLB" $KM
has '"verified":[[:space:]]*true' "$D/out"
[ "$(blocks)" -eq 2 ] || fail "with OMP_WAIT_POLICY unset hlb run was $(blocks) programs, not 2"
[ "$(last OMP_WAIT_POLICY)" = PASSIVE ] || fail "kernels ran under $(last OMP_WAIT_POLICY)"
[ "$SPIN" -eq 0 ] || [ "$(last GOMP_SPINCOUNT)" = 0 ] ||
  fail "kernels ran with GOMP_SPINCOUNT $(last GOMP_SPINCOUNT), not passive's 0"
[ "$(json omp_wait_policy)" = passive ] || fail "--json omp_wait_policy: $(json omp_wait_policy)"
[ "$(json omp_wait_policy_set_by_hlb)" = True ] || fail "--json: not set by hlb"
# The exec keeps the exit status and prints a usage error once.
expect_rc 2 env -u OMP_WAIT_POLICY "$HLB" run nosuchapp
[ "$(grep -c nosuchapp "$D/err")" -eq 1 ] || fail "the usage error was not printed once"

# (2) The user's value is kept, and hlb runs once: active, and empty (libgomp's default).
expect_rc 0 env OMP_WAIT_POLICY=active "$HLB" $KM
[ "$(blocks)" -eq 1 ] || fail "with OMP_WAIT_POLICY=active hlb run was $(blocks) programs"
[ "$(last OMP_WAIT_POLICY)" = ACTIVE ] || fail "active became $(last OMP_WAIT_POLICY)"
[ "$(json omp_wait_policy)" = active ] || fail "--json omp_wait_policy: $(json omp_wait_policy)"
[ "$(json omp_wait_policy_set_by_hlb)" = False ] || fail "--json: active said set by hlb"
expect_rc 0 env OMP_WAIT_POLICY= "$HLB" $KM
[ "$(blocks)" -eq 1 ] || fail "with OMP_WAIT_POLICY empty hlb run was $(blocks) programs"
[ "$(json omp_wait_policy)" = "" ] || fail "--json omp_wait_policy: $(json omp_wait_policy)"
[ "$(json omp_wait_policy_set_by_hlb)" = False ] || fail "--json: empty said set by hlb"
# A pid left in HLB_OMP_WAIT_POLICY_SET_IN by another process is not taken for this one's.
expect_rc 0 env OMP_WAIT_POLICY=passive HLB_OMP_WAIT_POLICY_SET_IN=1 "$HLB" $KM
[ "$(json omp_wait_policy_set_by_hlb)" = False ] || fail "a stale pid said set by hlb"

# (3) Commands that run no kernels are not executed again.
expect_rc 0 env -u OMP_WAIT_POLICY "$HLB" sim "$PRESETS/driver-core-1machine-matmul.json" \
  --items 1000 --json
[ "$(blocks)" -eq 1 ] || fail "hlb sim ran $(blocks) times"
echo ok
