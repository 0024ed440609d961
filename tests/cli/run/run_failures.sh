# A PU that fails its blocks is retired and the run still verifies; one failure is retried.
# cpu:1 is throttled 20x so that the run outlasts a late start of cpu:2's thread on a loaded
# machine (at 2x, cpu:1 once took every block before cpu:2 failed three).
. "$(dirname "$0")/lib.sh"
expect_rc 0 "$HLB" run mandelbrot --size 256 --pus cpu:1,cpu:2 --policy greedy --throttle cpu:1=20 \
  --inject cpu:2:1:0 --json
has '"verified":	true' "$D/out"
has '"retired":	true' "$D/out"
expect_rc 0 "$HLB" run mandelbrot --size 256 --pus cpu:1,cpu:2 --policy greedy --throttle cpu:1=20 \
  --inject cpu:2:1 --json
has '"verified":	true' "$D/out"
has '"failed_blocks":	1' "$D/out"
echo ok
