package schema

import (
	"bytes"
	"unicode/utf8"
)

// msgMappingValue is goccy/go-yaml's message for a `key: value` where no
// mapping may start, such as a line indented deeper than the key above it.
const msgMappingValue = "mapping value is not allowed in this context"

// overIndented places the caret of a "mapping value is not allowed" error
// on the line at fault. The parser reports it at the plain scalar that
// the over-indented line was read as the continuation of (the value of the
// line above); the fault is the later line whose `key:` made it a
// mapping. It returns that line's first character, the hint, and true; or
// false when the source does not look so.
func overIndented(src []byte, at Pos) (Pos, string, bool) {
	lines := bytes.Split(src, []byte("\n"))
	if at.Line < 1 || at.Line > len(lines) {
		return at, "", false
	}
	indent := func(l []byte) int { return len(l) - len(bytes.TrimLeft(l, " ")) }
	above := indent(lines[at.Line-1])
	for i := at.Line; i < len(lines); i++ {
		l := bytes.TrimRight(lines[i], " \r")
		t := bytes.TrimLeft(l, " ")
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if !bytes.Contains(t, []byte(": ")) && !bytes.HasSuffix(t, []byte(":")) {
			continue // still the scalar's text
		}
		if indent(l) <= above {
			return at, "", false
		}
		col := utf8.RuneCount(l[:indent(l)]) + 1
		return Pos{File: at.File, Line: i + 1, Col: col},
			"this line is indented deeper than the line above it: indent it as the key it belongs with (e.g. the node's other keys)", true
	}
	return at, "", false
}
