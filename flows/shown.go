package flows

// ShownValue is a value as people and agents read it: the `error` of every
// value that did not fail — a map item's {item, ok, output, error}, a
// node's {ok, output, error, skipped} — is left out, since it says
// nothing (ErrorType's empty strings). Expressions keep seeing it (`x.error.kind
// == ""`, docs/flow-files.md); what a prompt's reads, an ask's `show:` or
// the run's output renders does not carry it. v is not changed: lists and
// objects are copied.
func ShownValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ShownValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		drop := x["ok"] == true && emptyError(x["error"])
		//workflowcheck:ignore a copy of the object: the same whatever the order
		for k, e := range x {
			if drop && k == "error" {
				continue
			}
			out[k] = ShownValue(e)
		}
		return out
	}
	return v
}

// emptyError says whether v is the error of a value that did not fail:
// ErrorType's fields, each the empty string.
func emptyError(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != len(ErrorType.Fields) {
		return false
	}
	for _, f := range ErrorType.Fields {
		if s, ok := m[f.Name].(string); !ok || s != "" {
			return false
		}
	}
	return true
}
