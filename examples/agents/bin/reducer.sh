#!/usr/bin/env bash
# The reducer agent: reads a map's output (a list of {item, ok, output, error}
# whose outputs are the summarizer's lines) and writes a short report.
set -euo pipefail

turn=$(cat)

lines=$(printf '%s\n' "$turn" | grep -oE '[^ "]+: [0-9]+ lines, [0-9]+ words' | awk '!seen[$0]++' || true)
failed=$(printf '%s\n' "$turn" | grep -cE '"ok": *false' || true)
unread=$(printf '%s\n' "$turn" | grep -oE 'could not count: [^"]*' | awk '!seen[$0]++' || true)

if [ -z "$lines" ]; then
  echo "No file summaries came in."
else
  printf '%s\n' "$lines" | awk '
    {
      name = $1; sub(/:$/, "", name)
      n++; l += $2; w += $4
      if ($2 > maxl) { maxl = $2; big = name }
    }
    END {
      printf "# Fan-out report\n\n"
      printf "%d file(s), %d lines and %d words in all. Largest: %s (%d lines).\n\n", n, l, w, big, maxl
    }'
  printf '%s\n' "$lines" | sed 's/^/- /; s/$/./'
fi
if [ -n "$unread" ]; then
  printf '\nNot counted:\n'
  printf '%s\n' "$unread" | sed 's/^could not count: /- /; s/\\n/ /g; s/ *$//'
fi
if [ "${failed:-0}" -gt 0 ]; then
  printf '\n%s item(s) failed.\n' "$failed"
fi
