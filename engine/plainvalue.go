package engine

// plainValue is v as people and agents read it: the `error` of every
// value that did not fail — a map item's {item, ok, output, error}, a
// node's {ok, output, error} — is left out, since it says nothing (empty
// strings). Expressions keep seeing it (`x.error.kind == ""`, as
// docs/flow-files.md says); what a prompt, an ask's `show:` or the run's
// output renders does not carry it. v is not changed: lists and objects
// are copied.
func plainValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		drop := x["ok"] == true && emptyError(x["error"])
		for k, e := range x {
			if drop && k == "error" {
				continue
			}
			out[k] = plainValue(e)
		}
		return out
	}
	return v
}

// emptyError says whether v is the error of a value that did not fail.
func emptyError(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) != len(noError) {
		return false
	}
	for k := range noError {
		if s, ok := m[k].(string); !ok || s != "" {
			return false
		}
	}
	return true
}
