#!/usr/bin/env bash
# The writer agent: reads a loop's result ({converged, stop, iterations, last},
# or the loop's error) and writes a closing note.
set -euo pipefail

turn=$(cat)
iterations=$(printf '%s\n' "$turn" | grep -oE '"iterations": *[0-9]+' | sed -n 1p | grep -oE '[0-9]+$' || true)
kind=$(printf '%s\n' "$turn" | grep -oE '"kind": *"[a-z-]+"' | sed -n 1p | sed 's/.*"\([a-z-]*\)"$/\1/' || true)

if printf '%s\n' "$turn" | grep -qE '"converged": *true'; then
  echo "The change was approved after ${iterations:-?} review pass(es)."
elif [ -n "$kind" ]; then
  echo "The review did not end in approval: it failed with \`$kind\` after ${iterations:-all} pass(es). Read the last verdict's remarks in the run directory."
else
  echo "The review did not end in approval after ${iterations:-?} pass(es)."
fi
