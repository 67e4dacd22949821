package serve

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// TestRunPageLinksForksBothWays: a fork's page links the run it came
// from, and a run's page links its forks.
func TestRunPageLinksForksBothWays(t *testing.T) {
	fork := &RunView{ID: "f1", Flow: "abc", Status: "succeeded", Started: time.Now(),
		ForkedFrom: &record.Fork{Run: "r1", Visit: "b", Changes: []string{"input x=2"}}}
	orig := &RunView{ID: "r1", Flow: "abc", Status: "succeeded", Started: time.Now(), Forks: []string{"f1"}}
	for _, c := range []struct {
		v    *RunView
		want string
	}{
		{fork, `Forked from <a href="/runs/r1">r1</a> at <code>b</code> · input x=2`},
		{orig, `Forks: <a href="/runs/f1">f1</a>`},
	} {
		var buf bytes.Buffer
		data := map[string]any{"Title": "run " + c.v.ID, "Run": c.v, "Self": []*RunView{c.v}, "Zone": time.UTC}
		if err := pages().ExecuteTemplate(&buf, "run", data); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("the page of %s has no %q", c.v.ID, c.want)
		}
	}
}
