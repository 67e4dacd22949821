#!/bin/sh
# A scripted agent for the mutation suite: it notes its visit in $SIDE
# (a side effect the suite counts), sleeps as long as the turn asks
# (SLEEP:n, tenths of a second), and answers from everything it was given.
text=$(cat)
n=$(printf '%s' "$text" | sed -n 's/.*SLEEP:\([0-9]*\).*/\1/p' | head -n 1)
[ -n "$n" ] && sleep "$(awk "BEGIN{print $n/10}")"
printf '%s\n' "$FLOW_VISIT" >> "$SIDE"
echo "FLOW_USAGE {\"id\":\"$FLOW_VISIT\",\"input\":10,\"output\":5,\"cost\":0.01}" >&2
sum=$(printf '%s %s %s' "$1" "$FLOW_MODEL" "$text" | cksum | cut -d' ' -f1)
if [ -n "$FLOW_OUTPUT_SCHEMA" ]; then
	echo "{\"n\": $sum}"
else
	echo "answer $1 $sum"
fi
