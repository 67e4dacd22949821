package schema

// Normalize converts a value decoded from JSON to the Go types expressions
// were checked against: whole numbers where t says integer, float64 where it
// says number. A value read back from a journal or a values file goes
// through it before an expression sees it.
func (t *Type) Normalize(v any) any {
	switch t.Kind {
	case TInteger:
		if f, ok := v.(float64); ok {
			return int(f)
		}
		if i, ok := v.(int64); ok {
			return int(i)
		}
	case TNumber:
		if i, ok := v.(int64); ok {
			return float64(i)
		}
	case TList:
		if l, ok := v.([]any); ok {
			out := make([]any, len(l))
			for i, x := range l {
				out[i] = t.Elem.Normalize(x)
			}
			return out
		}
	case TObject:
		if m, ok := v.(map[string]any); ok {
			out := make(map[string]any, len(m))
			//workflowcheck:ignore a copy of a map into a map: the same in any order
			for k, x := range m {
				out[k] = x
			}
			for _, f := range t.Fields {
				if x, ok := m[f.Name]; ok {
					out[f.Name] = f.Type.Normalize(x)
				} else {
					out[f.Name] = nil
				}
			}
			return out
		}
	}
	return v
}
