# docs/options.md is what the table generates, and the help of every command is generated too.
. "$(dirname "$0")/lib.sh"
"$HLB" options --markdown >"$D/options.md" || fail "hlb options --markdown failed"
diff -u "$SRC/docs/options.md" "$D/options.md" >"$D/diff" ||
  { cat "$D/diff" >&2; fail "docs/options.md is stale: run 'hlb options --markdown > docs/options.md'"; }
# Every flag of a command's rows appears in its help; hlb help CMD is hlb CMD --help.
for cmd in $("$HLB" --help | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
  expect_rc 0 "$HLB" "$cmd" --help
  cp "$D/out" "$D/help"
  expect_rc 0 "$HLB" help "$cmd"
  cmp -s "$D/out" "$D/help" || fail "hlb help $cmd differs from hlb $cmd --help"
  for flag in $("$HLB" options | awk -v c="$cmd" 'NR > 1 && $4 ~ ("(^|[^a-z-])" c "([^a-z-]|$)") {print $3}'); do
    has "$flag" "$D/help"
  done
done
expect_rc 0 "$HLB" --version
has '^hlb [0-9]' "$D/out"
cp "$D/out" "$D/v1"
expect_rc 0 "$HLB" version
cmp -s "$D/out" "$D/v1" || fail "hlb version differs from hlb --version"
expect_rc 2 "$HLB" help nosuchcommand
echo ok
