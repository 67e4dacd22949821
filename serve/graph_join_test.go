package serve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

func loadGraphFlow(t *testing.T, src string) *flows.Flow {
	t.Helper()
	file := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return p.Root
}

const joinFlow = `name: g
nodes:
  - id: fan
    parallel:
      a: [{id: a1, run: [echo, a]}, {id: a2, run: [echo, a]}]
      b: [{id: b1, run: [echo, b]}]
      c: [{id: c1, run: [echo, c]}]
  - id: pick
    choice:
      - when: "true"
        do: [{id: yes, run: [echo, y]}]
      - else: [{id: no, run: [echo, n]}]
  - id: items
    map: "[1, 2]"
    max: 2
    do: [{id: work, run: [echo, w]}]
  - {id: last, run: [echo, l]}
  - {id: never, run: [echo, l]}
`

// TestGraphJoins: the node after a parallel is joined to the last node
// of every branch, the node after a choice to every branch, a map's body
// to the map's frame; each join ends on the top of the node it joins
// into and starts on the foot of the box it leaves.
func TestGraphJoins(t *testing.T) {
	g := flowGraph(loadGraphFlow(t, joinFlow), nil, false)
	boxes := map[string]GraphBox{}
	for _, b := range g.Boxes {
		boxes[b.Node] = b
	}
	into := map[string][]string{}
	for _, e := range g.Edges {
		if len(e.Points) < 4 || len(e.Points)%2 != 0 {
			t.Fatalf("edge %+v has no points", e)
		}
		if inFrame := strings.HasPrefix(e.From, e.To+"/"); !inFrame && (e.Kind == "join" || e.Kind == "next") {
			into[e.To] = append(into[e.To], e.From)
			to := boxes[e.To]
			x, y := e.Points[len(e.Points)-2], e.Points[len(e.Points)-1]
			if y != to.Y || x < to.X || x > to.X+to.W {
				t.Errorf("the edge %s → %s ends at (%d, %d), not on top of %+v", e.From, e.To, x, y, to)
			}
			from := boxes[e.From]
			if x, y := e.Points[0], e.Points[1]; y != from.Y+from.H || x < from.X || x > from.X+from.W {
				t.Errorf("the edge %s → %s starts at (%d, %d), not at the foot of %+v", e.From, e.To, x, y, from)
			}
		}
	}
	for to, want := range map[string][]string{
		"pick":  {"fan/a/a2", "fan/b/b1", "fan/c/c1"},
		"items": {"pick/no", "pick/yes"},
		"last":  {"items"},
		"never": {"last"},
	} {
		got := slices.Sorted(slices.Values(into[to]))
		if !slices.Equal(got, want) {
			t.Errorf("%s is joined to %v, want %v", to, got, want)
		}
	}
	var mapJoin bool
	for _, e := range g.Edges {
		if e.Kind == "join" && e.From == "items/work" && e.To == "items" {
			mapJoin = true
		}
	}
	if !mapJoin {
		t.Errorf("the map's body is not joined to its frame: %+v", g.Edges)
	}
}

// TestGraphEndedStates: once the run ended, a branch its choice did not
// take is untaken, and a node nothing reached is unreached, not pending;
// while it runs, both are pending.
func TestGraphEndedStates(t *testing.T) {
	f := loadGraphFlow(t, joinFlow)
	visits := []VisitView{
		{Visit: "fan", Status: "ok"}, {Visit: "fan/a/a1", Status: "ok"}, {Visit: "fan/a/a2", Status: "ok"},
		{Visit: "fan/b/b1", Status: "ok"}, {Visit: "fan/c/c1", Status: "ok"},
		{Visit: "pick", Status: "ok"}, {Visit: "pick/yes", Status: "ok"},
		{Visit: "items", Status: "failed"}, {Visit: "items[1]/work", Status: "failed"},
	}
	for _, c := range []struct {
		ended bool
		want  map[string]string
	}{
		{true, map[string]string{"pick/yes": "ok", "pick/no": "untaken", "items": "failed", "last": "unreached", "never": "unreached"}},
		// A choice that ended took its branch: the other is untaken already.
		{false, map[string]string{"pick/yes": "ok", "pick/no": "untaken", "last": "pending"}},
	} {
		g := flowGraph(f, visits, c.ended)
		for _, b := range g.Boxes {
			if want, ok := c.want[b.Node]; ok && b.State != want {
				t.Errorf("ended %v: %s is %q, want %q", c.ended, b.Node, b.State, want)
			}
		}
	}
}
