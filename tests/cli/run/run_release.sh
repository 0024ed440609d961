# A device that does not pay for the host core it holds is released and its core given to
# the cpu PU; the result still verifies and every item is done once. Skipped without OpenCL.
. "$(dirname "$0")/lib.sh"
[ "$CL" -eq 1 ] || { echo "no OpenCL device: skipped"; exit 77; }
pu_field() { # JSON FILE, PU NAME, FIELD
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([p for p in d["pus"] if p["name"]==sys.argv[2]][0].get(sys.argv[3]))' "$@"
}
items_sum() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(p["items"] for p in d["pus"]))' "$1"; }

# opencl:0 made 20 times slower: released, with both figures, and cpu gets its core. Greedy's
# equal small blocks make the device finish its first blocks long before the run ends, so the
# outcome does not depend on how busy the machine is.
REL="--policy greedy --params chunk=4000"
expect_rc 0 "$HLB" run blackscholes --size 2000000 --pus all --throttle opencl:0=20 $REL --json
has '"verified":[[:space:]]*true' "$D/out"
[ "$(pu_field "$D/out" opencl:0 released)" = True ] || fail "opencl:0 was not released"
pu_field "$D/out" opencl:0 release_reason | grep -q 'items/s against .* items/s for the 1 core' ||
  fail "the reason lacks the two rates"
[ "$(pu_field "$D/out" cpu cores_given)" = 1 ] || fail "cpu did not get the core back"
[ "$(items_sum "$D/out")" = 2000000 ] || fail "items do not add up to 2000000"
# The text output says it too.
expect_rc 0 "$HLB" run blackscholes --size 2000000 --pus all --throttle opencl:0=20 $REL
has 'opencl:0 released: ' "$D/out"
has 'cpu ran on 1 more core' "$D/out"
# --keep-devices keeps it; a cpu PU sized by the user gets no core, so nothing is released.
expect_rc 0 "$HLB" run blackscholes --size 2000000 --pus all --throttle opencl:0=20 $REL --keep-devices --json
[ "$(pu_field "$D/out" opencl:0 released)" = False ] || fail "--keep-devices released opencl:0"
expect_rc 0 "$HLB" run blackscholes --size 2000000 --pus cpu:1,opencl:0 --throttle opencl:0=20 $REL --json
[ "$(pu_field "$D/out" opencl:0 released)" = False ] || fail "released although cpu:1 was sized"
# Every policy and app still verifies with the release in play (k-means and spmv: later
# passes leave the released device out).
for app in matmul mandelbrot kmeans spmv blackscholes; do
  for policy in hlb greedy static plb-hac; do
    expect_rc 0 "$HLB" run $app --pus all --throttle opencl:0=20 --policy $policy --json \
      --size "$(case $app in matmul) echo 256;; mandelbrot) echo 256;; *) echo 20000;; esac)"
    has '"verified":[[:space:]]*true' "$D/out"
  done
done
echo ok
