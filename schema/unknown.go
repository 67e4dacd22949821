package schema

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/internal/ordered"
)

// Unknown reports the first key of v, a value decoded from JSON or YAML,
// that t does not declare, with a "did you mean" when a declared field is
// close: a run's input with a typo'd key would otherwise run on the
// defaults. Objects declared by t are closed, as their JSON Schema says
// (additionalProperties: false); fields of type any are not looked into.
func (t *Type) Unknown(v any) error { return t.unknown(v, &valuePath{}) }

func (t *Type) unknown(v any, at *valuePath) error {
	switch t.Kind {
	case TList:
		items, _ := v.([]any)
		for i, it := range items {
			*at = append(*at, pathStep{index: i})
			err := t.Elem.unknown(it, at)
			*at = (*at)[:len(*at)-1]
			if err != nil {
				return err
			}
		}
	case TObject:
		m, _ := v.(map[string]any)
		for _, k := range ordered.Keys(m) {
			f := t.Field(k)
			if f == nil {
				return t.unknownField(k, at)
			}
			*at = append(*at, pathStep{field: k})
			err := f.Type.unknown(m[k], at)
			*at = (*at)[:len(*at)-1]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *Type) unknownField(k string, at *valuePath) error {
	names := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		names[i] = f.Name
	}
	where := ""
	if len(*at) > 0 {
		where = " at " + at.String()
	}
	msg := fmt.Sprintf("unknown field %q%s", k, where)
	if hint := DidYouMean(k, names); hint != "" {
		msg += "; " + hint
	}
	// At names the unknown key itself, so an API can say which field.
	field := append(append(valuePath{}, *at...), pathStep{field: k}).String()
	if len(names) == 0 {
		return &ValueError{At: field, Msg: msg + ": the object declares no fields"}
	}
	return &ValueError{At: field, Msg: fmt.Sprintf("%s (declared: %s)", msg, strings.Join(names, ", "))}
}
