#!/usr/bin/env bash
# The coder agent: pretends to implement the goal, then to apply the remarks of
# the previous verdict. FLOW_VISIT names the visit, e.g. review#2/code.
set -euo pipefail

turn=$(cat)
pass=$(printf '%s\n' "${FLOW_VISIT:-}" | sed -n 's/.*#\([0-9][0-9]*\).*/\1/p')
pass=${pass:-1}

remarks=$(printf '%s\n' "$turn" | grep -oE '"remarks": *\[[^]]*\]' | head -n 1 |
  sed -e 's/^"remarks": *\[//' -e 's/\]$//' | grep -oE '"([^"\\]|\\.)*"' | sed 's/^"//; s/"$//' || true)

if [ -z "$remarks" ]; then
  echo "Pass $pass: implemented the goal in cmd/flow/version.go and added a test."
else
  n=$(printf '%s\n' "$remarks" | wc -l | tr -d ' ')
  echo "Pass $pass: applied $n remark(s):"
  printf '%s\n' "$remarks" | sed 's/^/- done: /'
fi
