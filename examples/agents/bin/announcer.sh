#!/usr/bin/env bash
# The announcer agent: reads the `changes` run node ({passed, exit, report},
# the report holding `git log --oneline` lines) and drafts release notes, one
# bullet per commit.
set -euo pipefail

turn=$(cat)
report=$(printf '%s\n' "$turn" | grep -oE '"report": *"([^"\\]|\\.)*"' | head -n 1 |
  sed -e 's/^"report": *"//' -e 's/"$//' || true)

echo "# Release notes"
echo
if [ -z "$report" ]; then
  echo "No changes since the last release."
  exit 0
fi
printf '%b\n' "$report" | sed '/^$/d' | head -n 10 | sed 's/^\([0-9a-f]*\) /- /'
