package serve

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/flowrun/flow/schema"
)

// inputText writes a flow's declared input for the page and GET
// /api/flows: the type in the flow syntax, where a field that need not be
// given says so: `name?` when it is optional or has a default, and the
// default beside it. {goal?: string (default "Add a flag"), n: integer}
// asks for n only.
func inputText(t *schema.Type) string {
	if t == nil {
		return "string"
	}
	return typeText(t)
}

func typeText(t *schema.Type) string {
	var s string
	switch t.Kind {
	case schema.TList:
		s = "[" + typeText(t.Elem) + "]"
	case schema.TObject:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			opt := ""
			if f.Optional || f.Type.HasDefault {
				opt = "?"
			}
			parts[i] = f.Name + opt + ": " + typeText(f.Type)
		}
		s = "{" + strings.Join(parts, ", ") + "}"
	default:
		s = string(t.Kind)
	}
	if t.HasDefault {
		s += " (default " + defaultText(t.Default) + ")"
	}
	return s
}

// defaultText is a default value as JSON, cut to 40 characters.
func defaultText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "…"
	}
	s := string(b)
	if utf8.RuneCountInString(s) > 40 {
		s = string([]rune(s)[:39]) + "…"
	}
	return s
}
