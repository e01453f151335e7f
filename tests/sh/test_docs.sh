#!/usr/bin/env bash
# The README stays true: its operator table is exactly what the registry generates, and every
# ```lua block in it runs (each in a fresh moonflow, after the blocks before it in the same section),
# and the blocks that show a file are that file.
set -u
MF=${1:?usage: test_docs.sh path/to/moonflow}
fail=0
table=$("$MF" scripts/op_table.lua)
readme_table=$(sed -n '/<!-- ops:begin -->/,/<!-- ops:end -->/p' README.md | sed '1d;$d')
if [ "$table" != "$readme_table" ]; then
  echo 'FAIL: README operator table differs from `moonflow scripts/op_table.lua`:'
  diff <(echo "$readme_table") <(echo "$table") | head -20
  fail=1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '/^```lua$/ {n++; f=sprintf("%s/block%02d.lua", dir, n); inb=1; next}
                   /^```$/ {inb=0; next}
                   inb {print > f}' README.md
count=0
for f in "$tmp"/block*.lua; do
  [ -e "$f" ] || continue
  count=$((count + 1))
  # a block may use `a` from the API block: give every block the same small prelude
  { echo 'local a = mf.tensor{{1, 2}, {3, 4}}'; cat "$f"; } >"$f.run"
  if ! out=$("$MF" "$f.run" 2>&1); then echo "FAIL: README block $(basename "$f") failed:"; echo "$out" | head -20; fail=1; fi
done
[ "$count" -ge 2 ] || { echo "FAIL: expected README lua blocks, found $count"; fail=1; }
# a block after a <!-- file: PATH --> line is that file verbatim (the Embedding section shows the
# example's code: examples/embed/main.cc, model.lua, CMakeLists.txt)
files=$(sed -n 's/^<!-- file: \(.*\) -->$/\1/p' README.md)
grep -qx 'examples/embed/main.cc' <<<"$files" || { echo 'FAIL: README does not show examples/embed/main.cc'; fail=1; }
for path in $files; do
  block=$(awk -v want="<!-- file: $path -->" '$0 == want {armed = 1; next}
            armed && !inb && /^```/ {inb = 1; next}
            inb && /^```$/ {exit}
            inb {print}' README.md)
  if [ "$block" != "$(cat "$path")" ]; then
    echo "FAIL: the README block marked $path differs from the file:"
    diff <(echo "$block") "$path" | head -20
    fail=1
  fi
done
# a block after a <!-- excerpt: PATH --> line appears verbatim in that file (part of a real file:
# the "Adding an operator" section shows registry blocks)
awk -v dir="$tmp" '/^<!-- excerpt: .* -->$/ {n++; p = $0; sub(/^<!-- excerpt: /, "", p); sub(/ -->$/, "", p)
                                             print p > sprintf("%s/excerpt%02d.path", dir, n); armed = 1; next}
                   armed && !inb && /^```/ {inb = 1; next}
                   inb && /^```$/ {inb = 0; armed = 0; next}
                   inb {print > sprintf("%s/excerpt%02d.txt", dir, n)}' README.md
for f in "$tmp"/excerpt*.path; do
  [ -e "$f" ] || continue
  path=$(cat "$f")
  block=$(cat "${f%.path}.txt")
  if [ ! -f "$path" ] || [[ "$(cat "$path")" != *"$block"* ]]; then
    echo "FAIL: a README block marked as an excerpt of $path is not in that file:"
    echo "$block" | head -5
    fail=1
  fi
done
exit $fail
