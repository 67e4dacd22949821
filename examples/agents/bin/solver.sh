#!/usr/bin/env bash
# The solver agent: answers "Question: <a> <op> <b>" with a number. Its quality
# depends on the model it runs on ($FLOW_MODEL), so that a sweep has something
# to find: `small` gets multiplication wrong, `medium` and `large` are always
# right (as is no model at all), and each model costs its own price per turn.
set -euo pipefail

turn=$(cat)
q=$(printf '%s\n' "$turn" | sed -n 's/^Question: //p' | sed -n 1p)
if ! printf '%s' "$q" | grep -qE '^[0-9]+ *[-+*/] *[0-9]+$'; then
  echo "I cannot read the question: $q" >&2
  exit 2
fi
answer=$(( q ))
case "${FLOW_MODEL:-}" in
  small)  cost=0.0010; case "$q" in *'*'*) answer=$(( answer + 1 )) ;; esac ;;
  medium) cost=0.0050 ;;
  large)  cost=0.0200 ;;
  *)      cost= ;;
esac
echo "$answer"
# Report usage as a model server would: tokens always, the price where known.
tokens=$(( ${#turn} / 4 ))
if [ -n "$cost" ]; then
  echo "FLOW_USAGE {\"input\": $tokens, \"output\": 2, \"cost\": $cost}" >&2
else
  echo "FLOW_USAGE {\"input\": $tokens, \"output\": 2}" >&2
fi
