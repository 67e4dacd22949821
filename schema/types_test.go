package schema

import "testing"

// A value that does not fit its type is refused with the path to where it
// does not, through objects and lists.
func TestCheckSaysWhere(t *testing.T) {
	item := &Type{Kind: TObject, Fields: []*Field{{Name: "n", Type: &Type{Kind: TInteger}}}}
	input := &Type{Kind: TObject, Fields: []*Field{{Name: "items", Type: &Type{Kind: TList, Elem: item}}}}
	for _, c := range []struct {
		v    any
		want string
	}{
		{map[string]any{"items": []any{map[string]any{"n": 1}, map[string]any{"n": "two"}}}, "want a whole number at items[1].n, got a string"},
		{map[string]any{"items": []any{map[string]any{}}}, `missing field "n" at items[0]`},
		{map[string]any{"items": "x"}, "want a list at items, got a string"},
		{[]any{}, "want an object, got a list"},
	} {
		err := input.Check(c.v)
		if err == nil || err.Error() != c.want {
			t.Errorf("Check(%v) = %v, want %q", c.v, err, c.want)
		}
	}
	if err := input.Check(map[string]any{"items": []any{map[string]any{"n": 3}}}); err != nil {
		t.Errorf("a fitting value was refused: %v", err)
	}
}
