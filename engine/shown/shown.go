// Package shown is how the walker shows values to an agent and reads its
// answers back (docs/flow-files.md, agent): a value as a template inserts
// it, as fenced JSON in a prompt, and a typed answer parsed and checked
// against its node's output type.
package shown

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// Text is a value as a template shows it.
func Text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Fence puts s in a code fence.
func Fence(s string) string {
	return "```\n" + strings.TrimRight(s, "\n") + "\n```"
}

// JSONFence shows a value as fenced JSON: indented when it nests at most
// indentDepth deep, compact beyond. Indentation costs each line two bytes
// per level, so a list nested n deep indents to n² bytes: 20 KB of
// nested lists became a 200 MB turn.
func JSONFence(v any) string {
	v = flows.ShownValue(v)
	var b []byte
	var err error
	if nests(v, indentDepth) {
		b, err = json.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", "  ")
	}
	if err != nil {
		return Fence(fmt.Sprint(v))
	}
	return "```json\n" + string(b) + "\n```"
}

// indentDepth is how deep a value shown in a prompt may nest and still be
// indented.
const indentDepth = 16

// nests reports whether v nests deeper than depth lists and objects.
func nests(v any, depth int) bool {
	switch x := v.(type) {
	case []any:
		if depth == 0 {
			return true
		}
		for _, e := range x {
			if nests(e, depth-1) {
				return true
			}
		}
	case map[string]any:
		if depth == 0 {
			return true
		}
		//workflowcheck:ignore whether any value nests too deep: the same answer in any order
		for _, e := range x {
			if nests(e, depth-1) {
				return true
			}
		}
	}
	return false
}

// ParseTyped reads a typed answer: the whole answer must be one JSON value
// (a single surrounding code fence is tolerated), and it must fit t. Values
// are never picked out of prose.
func ParseTyped(answer string, t *schema.Type) (any, error) {
	s := strings.TrimSpace(answer)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) > 6 {
		s = strings.TrimSpace(s[3 : len(s)-3])
		if i := strings.IndexByte(s, '\n'); i >= 0 && !strings.ContainsAny(s[:i], "{[\"") {
			s = s[i+1:]
		}
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the answer has more than one JSON value")
	}
	if err := t.Check(v); err != nil {
		return nil, err
	}
	return t.Normalize(v), nil
}
