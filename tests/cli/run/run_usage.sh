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
expect_rc 0 "$HLB" run --help
has 'mandelbrot' "$D/out"
echo ok
