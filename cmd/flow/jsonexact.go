package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// decodeExact reads one JSON value with its integers exact: a whole number
// becomes an int64, as a flow's YAML integers are, and not a float64,
// which holds integers exactly only up to 2^53 (9007199254740993 became
// …992). A whole number past int64 is refused rather than rounded; other
// numbers are float64 (docs/flow-files.md, "Inputs").
func decodeExact(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid character after top-level value")
	}
	return exactNumbers(v, "")
}

// numberError is a JSON number flow cannot keep exactly.
type numberError struct{ msg string }

func (e *numberError) Error() string { return e.msg }

// exactNumbers replaces each json.Number of v by an int64 or a float64.
func exactNumbers(v any, at string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			i, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, &numberError{fmt.Sprintf("%s%s is a whole number too large to keep exactly (past ±9223372036854775807); pass it as a string", s, where(at))}
			}
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, &numberError{fmt.Sprintf("%s%s is out of range for a number", s, where(at))}
		}
		return f, nil
	case []any:
		for i, e := range x {
			n, err := exactNumbers(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	case map[string]any:
		for k, e := range x {
			n, err := exactNumbers(e, at+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	}
	return v, nil
}

func where(at string) string {
	if at == "" {
		return ""
	}
	return " at " + strings.TrimPrefix(at, ".")
}
