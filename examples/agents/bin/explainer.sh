#!/usr/bin/env bash
# The explainer agent: reads the solver's answer and the check (a run node's
# {passed, exit, report}) and says what happened in one sentence. Its words do
# not depend on the model; its price does.
set -euo pipefail

turn=$(cat)
section() { printf '%s\n' "$turn" | awk -v h="## $1" '$0 == h { f = 1; next } /^## / { f = 0 } f'; }
answer=$(section solve | grep -v '^ *$' | sed -n 1p)
if section check | grep -qE '"passed": *true'; then
  echo "The answer $answer is right: the check passed."
else
  echo "The answer $answer is wrong: the check failed."
fi
case "${FLOW_MODEL:-}" in
  small) cost=0.0005 ;; medium) cost=0.0020 ;; large) cost=0.0100 ;; *) cost= ;;
esac
tokens=$(( ${#turn} / 4 ))
if [ -n "$cost" ]; then
  echo "FLOW_USAGE {\"input\": $tokens, \"output\": 12, \"cost\": $cost}" >&2
else
  echo "FLOW_USAGE {\"input\": $tokens, \"output\": 12}" >&2
fi
