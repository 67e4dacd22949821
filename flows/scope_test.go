package flows

import (
	"fmt"
	"testing"

	"github.com/flowrun/flow/schema"
)

// Lookups through the index entries find the innermost binding, as a walk
// of the whole list would.
func TestScopeLookupFindsInnermost(t *testing.T) {
	var sc *scope
	want := map[string]*schema.Type{}
	for i := range 200 {
		name := fmt.Sprintf("n%d", i%70) // names repeat: later ones shadow
		typ := &schema.Type{Kind: schema.TString, Pos: schema.Pos{Line: i}}
		sc = sc.with(name, typ)
		want[name] = typ
		for n, w := range want {
			if got, ok := sc.lookup(n); !ok || got != w {
				t.Fatalf("after %d entries, lookup(%s) = line %v, want line %d", i+1, n, got, w.Pos.Line)
			}
		}
		if _, ok := sc.lookup("missing"); ok {
			t.Fatal("found a name never bound")
		}
	}
}
