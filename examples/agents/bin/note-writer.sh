#!/usr/bin/env bash
# The note-writer agent: reads "Write the note <name>." and writes
# notes/<name>.md in its working directory — under isolation: worktree, a git
# worktree of its own, so writers running at once never see each other's
# files. The first note takes longest, so the writers finish out of order and
# the landing order shows it does not depend on that.
set -euo pipefail

turn=$(cat)
name=$(printf '%s\n' "$turn" | sed -n 1p | sed -n 's/^Write the note \([A-Za-z0-9_-]*\)\..*/\1/p')
if [ -z "$name" ]; then
  echo "no note name in the turn" >&2
  exit 1
fi
case "${FLOW_VISIT:-}" in
*"[1]"*) sleep 0.3 ;;
esac
mkdir -p notes
printf '# %s\n\nA note written by %s.\n' "$name" "${FLOW_VISIT:-a writer}" > "notes/$name.md"
echo "wrote notes/$name.md"
