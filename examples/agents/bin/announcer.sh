#!/usr/bin/env bash
# The announcer agent: reads the `changes` run node ({passed, exit, report},
# the report holding `git log --oneline` lines) and drafts release notes, one
# bullet per commit.
set -euo pipefail

turn=$(cat)
report=$(printf '%s\n' "$turn" | grep -oE '"report": *"([^"\\]|\\.)*"' | sed -n 1p |
  sed -e 's/^"report": *"//' -e 's/"$//' || true)

echo "# Release notes"
echo
if [ -z "$report" ]; then
  echo "No changes since the last release."
  exit 0
fi
# awk takes the first ten lines itself: `head` would close the pipe early,
# and under pipefail a writer cut off by SIGPIPE fails the turn.
printf '%b\n' "$report" | awk 'NF && n++ < 10 { sub(/^[0-9a-f]+ /, "- "); print }'
