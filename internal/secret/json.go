package secret

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// quote returns s as a JSON string literal, without HTML escaping.
func quote(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// valueSpan is a string of a JSON text, by the path of keys and indexes
// to it, joined by dots.
type valueSpan struct {
	path       string
	start, end int
	key        bool // an object's key
}

// stringValues returns the string values of the JSON text b, object keys
// left out, in order.
func stringValues(b []byte) []valueSpan {
	var out []valueSpan
	for _, s := range jsonStrings(b) {
		if !s.key {
			out = append(out, s)
		}
	}
	return out
}

// jsonStrings returns the strings of the JSON text b, keys and values, in
// order. A text that is not JSON yields what was read before the fault.
func jsonStrings(b []byte) []valueSpan {
	type frame struct {
		object bool
		key    string
		index  int
		isKey  bool // the next string is a key
	}
	var stack []frame
	var out []valueSpan
	path := func() string {
		parts := make([]string, len(stack))
		for i, f := range stack {
			if f.object {
				parts[i] = f.key
			} else {
				parts[i] = strconv.Itoa(f.index)
			}
		}
		return strings.Join(parts, ".")
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{':
			stack = append(stack, frame{object: true, isKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) == 0 {
				return out
			}
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].isKey = true
				} else {
					stack[n-1].index++
				}
			}
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].isKey = false
			}
		case '"':
			start := i
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return out
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
				stack[n-1].key = string(b[start+1 : i])
				out = append(out, valueSpan{path: path(), start: start, end: i + 1, key: true})
				continue
			}
			out = append(out, valueSpan{path: path(), start: start, end: i + 1})
		}
	}
	return out
}

// JSON returns the JSON text b with every secret in its strings replaced
// by Mask: in every string value, and in every object key but those that
// are flow's own words (FlowWord), so that flow's structure survives
// whatever a secret's value is. b itself is returned when it holds no
// secret. A string is searched for in the forms encoders write (Go's, with
// or without HTML escaping); one spelt with needless escapes (\u0073 for
// s) is found by Lines, which reads every value decoded. A text that is not
// JSON is redacted whole (Bytes).
func (r *Redactor) JSON(b []byte) []byte {
	if !r.Contains(b) {
		return b
	}
	if !json.Valid(b) {
		return r.Bytes(b)
	}
	var out []byte
	at := 0
	for _, s := range jsonStrings(b) {
		inner := b[s.start+1 : s.end-1] // a form with a quote is found escaped only
		if !r.Contains(inner) || s.key && FlowWord(string(inner)) {
			continue
		}
		lit := []byte{'"'}
		lit = append(lit, r.Bytes(inner)...)
		lit = append(lit, '"')
		if bytes.IndexByte(inner, '\\') >= 0 {
			// A match may straddle an escape (\u0000 and a secret of
			// zeros): the text is redacted decoded, and quoted again.
			var text string
			if json.Unmarshal(b[s.start:s.end], &text) != nil {
				continue
			}
			lit = quote(r.String(text))
		}
		out = append(out, b[at:s.start]...)
		out = append(out, lit...)
		at = s.end
	}
	if out == nil {
		return b
	}
	return append(out, b[at:]...)
}
