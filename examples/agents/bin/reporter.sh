#!/usr/bin/env bash
# The reporter agent: reads the nightly checks (a parallel's output, keyed by
# branch, each a run node's {passed, exit, report}) and the last commit, and
# writes the summary.
set -euo pipefail

turn=$(cat)

# The text under one "## <name>" heading of the turn.
section() { printf '%s\n' "$turn" | awk -v h="## $1" '$0 == h { f = 1; next } /^## / { f = 0 } f'; }

checks=$(section checks)
# How often a pattern occurs in the checks (grep fails when it finds none).
occurrences() { { printf '%s\n' "$checks" | grep -oE "$1" || true; } | wc -l | tr -d ' '; }

passed=$(occurrences '"passed": *true')
failed=$(occurrences '"passed": *false')

echo "# Nightly summary"
echo
echo "Checks: $passed passed, $failed failed."
# One line per branch: its name, whether it passed, and its report's first line.
printf '%s\n' "$checks" | tr -d '\n' | grep -oE '"[A-Za-z_][A-Za-z0-9_]*": *\{[^{}]*"passed"[^{}]*\}' |
  while IFS= read -r branch; do
    name=$(printf '%s\n' "$branch" | sed 's/^"\([^"]*\)".*/\1/')
    if printf '%s\n' "$branch" | grep -qE '"passed": *true'; then verdict=passed; else verdict=FAILED; fi
    report=$(printf '%s\n' "$branch" | grep -oE '"report": *"([^"\\]|\\.)*"' |
      sed -e 's/^"report": *"//' -e 's/"$//' -e 's/\\n.*//' | cut -c 1-100)
    echo "- $name: $verdict${report:+ — $report}"
  done || true

commit=$(section last_commit)
if printf '%s\n' "$commit" | grep -qE '"kind": *"'; then
  echo
  echo "Last commit: unknown (git could not run)."
else
  line=$(printf '%s\n' "$commit" | grep -oE '"report": *"([^"\\]|\\.)*"' | sed -n 1p |
    sed -e 's/^"report": *"//' -e 's/"$//' -e 's/\\n.*//' || true)
  echo
  echo "Last commit: ${line:-none}"
fi
