#!/usr/bin/env bash
# The repository explains itself: nothing a user reads (README, docs, installed headers, the
# sources and the command's help) points outside the repository, papers are cited by name and
# section (docs/papers.md), and every relative link in the Markdown resolves.
#   self_contained.sh SOURCE_DIR HLB_BINARY
set -uo pipefail
src=$1 hlb=$2
cd "$src" || exit 2
fail=0
say() { echo "self_contained: $*" >&2; fail=1; }

# 1. No path outside the repository, no paper by file number.
pattern='DESIGN\.md|\.\./shared|shared/papers|[Pp]apers? 00[0-4]\b|\((00[0-4])[ ,:)]'
hits=$(git ls-files README.md docs include src apps tools examples bench presets scripts tests 2>/dev/null |
  grep -v '^tests/docs/' | xargs grep -n -E "$pattern" 2>/dev/null)
[ -z "$hits" ] || say "references outside the repository or papers by number:"$'\n'"$hits"

# 2. The help of every command names only files that exist.
help=$("$hlb" --help)
for cmd in $("$hlb" --help | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}'); do
  help+=$'\n'$("$hlb" "$cmd" --help 2>&1)
done
for f in $(grep -o -E '\b(docs|examples|presets)/[A-Za-z0-9_./-]+[A-Za-z0-9_]' <<<"$help" | sort -u); do
  [ -e "$f" ] || say "the help names $f, which does not exist"
done

# 3. Relative links of README.md and docs/*.md resolve.
for md in README.md docs/*.md; do
  dir=$(dirname "$md")
  for link in $(grep -o -E '\]\([^)#:]+(#[^)]*)?\)' "$md" | sed -E 's/^\]\(([^)#]*).*/\1/'); do
    [ -e "$dir/$link" ] || say "$md links to $link, which does not exist"
  done
done
exit $fail
