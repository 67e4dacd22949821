#!/usr/bin/env bash
# The reviewer agent, in two roles.
#
# Asked for a typed verdict (FLOW_OUTPUT_SCHEMA is set, with the shape flow
# expects, which this script already knows) it answers {approved, remarks} as
# JSON: it approves from the second pass of the loop on (FLOW_VISIT names the
# visit, e.g. review#2/verdict), and only when the tests passed.
#
# Otherwise it reviews the goal for the aspect its prompt names (correctness,
# tests or style) and answers its remarks as text, one a line.
set -euo pipefail

turn=$(cat)

if [ -z "${FLOW_OUTPUT_SCHEMA:-}" ]; then
  prompt=$(printf '%s\n' "$turn" | sed -n 1p)
  case "$prompt" in
  *"for correctness"*)
    echo "- The flag must print the version the binary was built from, not a constant."
    echo "- --version must exit 0 and ignore the other arguments." ;;
  *"for tests"*)
    echo "- Test --version on its own and together with other flags." ;;
  *"for style"*)
    echo "- Call it --version, with no shorthand, and describe it in the help like the other flags." ;;
  *)
    echo "- No remarks." ;;
  esac
  exit 0
fi

pass=$(printf '%s\n' "${FLOW_VISIT:-}" | sed -n 's/.*#\([0-9][0-9]*\).*/\1/p')
pass=${pass:-1}

if ! printf '%s\n' "$turn" | grep -qE '"passed": *true'; then
  echo '{"approved": false, "remarks": ["The tests do not pass: fix them first."]}'
elif [ "$pass" -lt 2 ]; then
  echo '{"approved": false, "remarks": ["Print the version from the build info, not a constant.", "Test the flag on its own and with other flags."]}'
else
  echo '{"approved": true, "remarks": []}'
fi
