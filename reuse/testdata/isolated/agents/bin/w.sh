#!/bin/sh
# Writes notes/<name>.md for "Write the note <name>." in its working
# directory, and notes its visit in $SIDE (the side effect the test counts).
name=$(head -n 1 | sed -n 's/^Write the note \([a-z]*\)\..*/\1/p')
printf '%s\n' "$FLOW_VISIT" >> "$SIDE"
mkdir -p notes
printf 'the note %s\n' "$name" > "notes/$name.md"
echo "wrote $name"
