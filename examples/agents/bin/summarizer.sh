#!/usr/bin/env bash
# The summarizer agent: reads a turn whose `wc` section is a run node's output
# {passed, exit, report} and answers one line, "<file>: <n> lines, <m> words."
set -euo pipefail

turn=$(cat)

# JSON keeps the report on one line (newlines are \n), so grep can lift it out.
report=$(printf '%s\n' "$turn" | grep -oE '"report": *"([^"\\]|\\.)*"' | sed -n 1p || true)
counts=$(printf '%s\n' "$report" | grep -oE '[0-9]+ +[0-9]+ +[^ "\\]+' | sed -n 1p || true)

if [ -n "$counts" ]; then
  printf '%s\n' "$counts" | awk '{ printf "%s: %d lines, %d words.\n", $3, $1, $2 }'
else
  why=$(printf '%s\n' "$report" | sed -e 's/^"report": *"//' -e 's/"$//' -e 's/\\n/ /g' -e 's/ *$//')
  printf 'could not count: %s\n' "${why:-no report in the turn}"
fi
