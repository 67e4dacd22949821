package schema

import "testing"

func TestDidYouMean(t *testing.T) {
	cases := []struct {
		got  string
		from []string
		want string
	}{
		{"timout", []string{"timeout", "prompt"}, `did you mean "timeout"?`},
		{"aproved", []string{"approved", "remarks"}, `did you mean "approved"?`},
		{"outptu", []string{"output", "ok"}, `did you mean "output"?`},
		{"goal", []string{"plan", "input"}, ""}, // too far to be a typo
		{"nada", []string{"a", "b"}, ""},
		{"vet", []string{"test"}, ""},
	}
	for _, c := range cases {
		if got := DidYouMean(c.got, c.from); got != c.want {
			t.Errorf("DidYouMean(%q, %v) = %q, want %q", c.got, c.from, got, c.want)
		}
	}
}
