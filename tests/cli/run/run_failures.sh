# A PU that fails its blocks is retired and the run still verifies; one failure is retried.
. "$(dirname "$0")/lib.sh"
expect_rc 0 "$HLB" run mandelbrot --size 256 --pus cpu:1,cpu:2 --policy greedy --throttle cpu:1=2 \
  --inject cpu:2:1:0 --json
has '"verified":	true' "$D/out"
has '"retired":	true' "$D/out"
expect_rc 0 "$HLB" run mandelbrot --size 256 --pus cpu:1,cpu:2 --policy greedy --throttle cpu:1=2 \
  --inject cpu:2:1 --json
has '"verified":	true' "$D/out"
has '"failed_blocks":	1' "$D/out"
echo ok
