#!/usr/bin/env bash
# The reviewer agent: answers {approved, remarks} as JSON on stdout. It
# approves from the second pass of the loop on, and only when the tests passed.
# FLOW_VISIT names the visit (review#2/verdict); FLOW_OUTPUT_SCHEMA carries the
# shape flow expects, which this script already knows.
set -euo pipefail

turn=$(cat)
pass=$(printf '%s\n' "${FLOW_VISIT:-}" | sed -n 's/.*#\([0-9][0-9]*\).*/\1/p')
pass=${pass:-1}

if ! printf '%s\n' "$turn" | grep -qE '"passed": *true'; then
  echo '{"approved": false, "remarks": ["The tests do not pass: fix them first."]}'
elif [ "$pass" -lt 2 ]; then
  echo '{"approved": false, "remarks": ["Print the version from the build info, not a constant.", "Test the flag on its own and with other flags."]}'
else
  echo '{"approved": true, "remarks": []}'
fi
