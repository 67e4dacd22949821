#!/usr/bin/env bash
# The landing-reviewer agent: reads the `landed` section (a run node's output,
# `git log --first-parent --name-only` of the run's branch as JSON) and the
# order the prompt asks for, and says whether the notes landed in that order.
set -euo pipefail

turn=$(cat)
want=$(printf '%s\n' "$turn" | sed -n 's/.*in the order the notes were given (\([^)]*\)).*/\1/p' | sed -n 1p | tr -d ' ')
report=$(printf '%s\n' "$turn" | grep -oE '"report": *"([^"\\]|\\.)*"' | sed -n 1p || true)
got=$(printf '%s\n' "$report" | grep -oE 'notes/[A-Za-z0-9_-]+\.md' | sed -e 's|notes/||' -e 's|\.md$||' | paste -sd, -)
landings=$(printf '%s\n' "$report" | grep -oE 'flow: land [^\\"]*' | wc -l | tr -d ' ')

if [ -n "$got" ] && [ "$got" = "$want" ]; then
  echo "All ${landings} notes landed, in order: ${got//,/, }."
else
  echo "The notes did not land as asked: landed [${got}], asked for [${want}]."
fi
