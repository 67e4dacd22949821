package schema

import "time"

// String is a scalar from the file with the position of its first character.
// The zero value means "absent": SPEC 3.6 treats absent and empty alike.
type String struct {
	Value string
	Pos   Pos
	// Style tells how the scalar was written, so that a column inside the
	// value can be mapped back onto the file (expression errors).
	Style ScalarStyle
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
