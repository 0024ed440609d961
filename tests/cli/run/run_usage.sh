# Bad usage exits 2 with one line naming the problem.
. "$(dirname "$0")/lib.sh"
expect_rc 2 "$HLB" run
expect_rc 2 "$HLB" run nosuchapp
has 'nosuchapp' "$D/err"
expect_rc 2 "$HLB" run matmul --size 1
has '\-\-size' "$D/err"
expect_rc 2 "$HLB" run matmul --pus gpu:0
has 'gpu' "$D/err"
expect_rc 2 "$HLB" run matmul --size 32 --pus cpu --throttle nope=2
has 'nope' "$D/err"
expect_rc 2 "$HLB" run matmul --size 32 --pus cpu --throttle cpu=0.5
expect_rc 2 "$HLB" run matmul --size 32 --pus cpu --policy no-such-policy
has 'no-such-policy' "$D/err"
expect_rc 2 "$HLB" run matmul --size 32 --pus cpu --inject cpu:x
expect_rc 2 "$HLB" run matmul --bogus
# Every app at every tiny size verifies or is refused as bad input (k-means needs one point
# per cluster to start from), never a crash or a wrong result.
for app in $("$HLB" run --help | awk '/size = / {print $1}'); do
  for size in 1 2 3 4 5 6 7 8 9 10; do
    "$HLB" run "$app" --size $size --pus cpu >"$D/out" 2>"$D/err"; rc=$?
    case $rc in
      0) has 'verified' "$D/out" ;;
      2) has 'size' "$D/err" ;;
      *) cat "$D/out" "$D/err" >&2; fail "$app --size $size exited $rc" ;;
    esac
  done
done
expect_rc 0 "$HLB" run --help
has 'mandelbrot' "$D/out"
echo ok
