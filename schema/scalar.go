package schema

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// String is a scalar from the file with the position of its first character.
// The zero value means "absent": absent and empty are alike (docs/flow-files.md, agent).
type String struct {
	Value string
	Pos   Pos
	// Style tells how the scalar was written, so that a column inside the
	// value can be mapped back onto the file (expression errors).
	Style ScalarStyle
	// raw is the scalar as written, from rawPos on: after the opening quote
	// of a quoted scalar, from the start of the first content line of a
	// block. PosAt aligns Value with it.
	raw    string
	rawPos Pos
	// memo is where PosAt last stopped, shared by the copies of a scalar
	// read from a file: a script of many ${{ }} asks for their positions
	// in order, and aligning each from the scalar's start made that
	// quadratic (20,000 in 540 KB took 100 s).
	memo *posMemo
}

// posMemo is PosAt's state where it last stopped.
type posMemo struct {
	mu              sync.Mutex
	i, j, line, col int
	set             bool
}

// ScalarStyle is how a scalar was written in YAML.
type ScalarStyle int

// The scalar styles.
const (
	Plain ScalarStyle = iota
	SingleQuoted
	DoubleQuoted
	Block // | or >
)

// Set reports whether the scalar is present and not empty.
func (s String) Set() bool { return s.Value != "" }

// Int is an integer scalar with its position.
type Int struct {
	Value int
	Pos   Pos
	IsSet bool
}

// Bool is a boolean scalar with its position.
type Bool struct {
	Value bool
	Pos   Pos
	IsSet bool
}

// Duration is a duration scalar ("90s", "10m", "1h30m") with its position.
type Duration struct {
	Value time.Duration
	Pos   Pos
	Raw   string
}

// Set reports whether the duration was given.
func (d Duration) Set() bool { return d.Raw != "" }

// Float is a number scalar with its position.
type Float struct {
	Value float64
	Pos   Pos
	IsSet bool
}

// PosAt maps a byte offset inside Value onto the file, so that an error in
// an expression points at its column even in a quoted, escaped, folded or
// block scalar. Offsets past the end point just after the value.
func (s String) PosAt(off int) Pos {
	if !s.Pos.IsValid() {
		return s.Pos
	}
	off = min(max(off, 0), len(s.Value))
	if s.raw == "" {
		// Built by hand, not read: assume the value sits on one line.
		p := s.Pos
		if !strings.Contains(s.Value[:off], "\n") {
			p.Col += utf8.RuneCountInString(s.Value[:off])
		}
		return p
	}
	raw, v := s.raw, s.Value
	line, col := s.rawPos.Line, s.rawPos.Col
	i, j := 0, 0
	if m := s.memo; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.set && m.i <= off {
			i, j, line, col = m.i, m.j, m.line, m.col
		}
	}
	next := func() { // consume raw[j]
		switch {
		case raw[j] == '\n':
			line, col = line+1, 1
		case raw[j]&0xC0 != 0x80: // not a UTF-8 continuation byte
			col++
		}
		j++
	}
	for i < off && j < len(raw) {
		switch {
		case s.Style == DoubleQuoted && raw[j] == '\\':
			n := escapeLen(raw[j:])
			if j+1 < len(raw) && (raw[j+1] == '\n' || raw[j+1] == '\r') {
				n = 0 // an escaped line break stands for nothing
			} else {
				_, w := utf8.DecodeRuneInString(v[i:])
				i += w
			}
			for k := 0; k < max(n, 2) && j < len(raw); k++ {
				next()
			}
		case v[i] == raw[j]:
			i++
			next()
		case s.Style == SingleQuoted && raw[j] == '\'':
			next() // the second quote of ''
		case isBlank(raw[j]):
			next() // indentation, or a line break folded into a space
		case isBlank(v[i]):
			i++
		default:
			return Pos{File: s.Pos.File, Line: line, Col: col} // cannot align
		}
	}
	if m := s.memo; m != nil {
		m.i, m.j, m.line, m.col, m.set = i, j, line, col, true
	}
	// Step over indentation and folded line breaks before the character at off.
	for j < len(raw) && isBlank(raw[j]) && (off == len(v) || raw[j] != v[off]) {
		next()
	}
	return Pos{File: s.Pos.File, Line: line, Col: col}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// escapeLen is the length of the escape sequence at the start of raw, which
// begins with a backslash (YAML 1.2 double-quoted escapes).
func escapeLen(raw string) int {
	if len(raw) < 2 {
		return len(raw)
	}
	switch raw[1] {
	case 'x':
		return 4
	case 'u':
		return 6
	case 'U':
		return 10
	}
	return 2
}
