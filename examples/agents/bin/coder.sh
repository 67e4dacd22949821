#!/usr/bin/env bash
# The coder agent: pretends to implement the goal, heeding the parallel
# reviews, then to apply the remarks of the previous verdict. FLOW_VISIT names
# the visit, e.g. review#2/code.
set -euo pipefail

turn=$(cat)
pass=$(printf '%s\n' "${FLOW_VISIT:-}" | sed -n 's/.*#\([0-9][0-9]*\).*/\1/p')
pass=${pass:-1}

# The text under one "## <name>" heading of the turn.
section() { printf '%s\n' "$turn" | awk -v h="## $1" '$0 == h { f = 1; next } /^## / { f = 0 } f'; }

# The previous verdict is fenced JSON, one remark a line inside "remarks": [ … ].
remarks=$(section review.previous.verdict | awk '
  /"remarks": *\[ *\]/ { exit }
  /"remarks": *\[/ { f = 1; next }
  f && /^ *\]/ { exit }
  f { sub(/^ *"/, ""); sub(/",? *$/, ""); print }')
# The reviews are a parallel output: one "<branch>": … line per reviewer.
reviews=$({ section reviews | grep -E '^  "[A-Za-z_][A-Za-z0-9_]*": ' || true; } | wc -l | tr -d ' ')

if [ -z "$remarks" ]; then
  echo "Pass $pass: implemented the goal in cmd/flow/version.go and added a test, heeding $reviews review(s)."
else
  n=$(printf '%s\n' "$remarks" | wc -l | tr -d ' ')
  echo "Pass $pass: applied $n remark(s):"
  printf '%s\n' "$remarks" | sed 's/^/- done: /'
fi
