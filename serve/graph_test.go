package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// TestGraphStatesByNode: visits map onto the flow's nodes by path with
// iterations and items left out; the state that says most wins (a running
// item makes its node running, a failed one failed), frames count how far
// they got, and no two boxes of one sequence overlap.
func TestGraphStatesByNode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "g.yaml")
	src := `name: g
nodes:
  - id: pick
    choice:
      - when: "true"
        do: [{id: yes, run: [echo, y]}]
      - else: [{id: no, run: [echo, n]}]
  - id: rounds
    loop: {until: "false", max: 4}
    do:
      - id: fan
        map: "[1, 2]"
        max: 2
        do: [{id: work, run: [echo, w]}]
  - {id: last, run: [echo, l]}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	visits := []VisitView{
		{Visit: "pick", Status: "ok"}, {Visit: "pick/yes", Status: "ok"},
		{Visit: "rounds", Status: "running"},
		{Visit: "rounds#1/fan", Status: "ok"}, {Visit: "rounds#1/fan[1]/work", Status: "ok"}, {Visit: "rounds#1/fan[2]/work", Status: "failed"},
		{Visit: "rounds#2/fan", Status: "running"}, {Visit: "rounds#2/fan[1]/work", Status: "running"},
	}
	g := flowGraph(p.Root, visits, false)
	boxes := map[string]GraphBox{}
	for _, b := range g.Boxes {
		boxes[b.Node] = b
	}
	for node, want := range map[string]string{"pick": "ok", "pick/yes": "ok", "pick/no": "untaken", "rounds": "running",
		"rounds/fan": "running", "rounds/fan/work": "running", "last": "pending"} {
		if boxes[node].State != want {
			t.Errorf("%s is %q, want %q", node, boxes[node].State, want)
		}
	}
	if b := boxes["rounds/fan/work"]; b.Visits != 3 {
		t.Errorf("work had %d visits, want 3", b.Visits)
	}
	if d := boxes["rounds"].Detail; d != "loop · 2 of max 4 iterations" {
		t.Errorf("rounds says %q", d)
	}
	if d := boxes["rounds/fan"].Detail; d != "map · 2 items" {
		t.Errorf("fan says %q", d)
	}
	yes, no := boxes["pick/yes"], boxes["pick/no"]
	if yes.Y != no.Y || yes.X+yes.W > no.X {
		t.Errorf("the branches should sit side by side: %+v %+v", yes, no)
	}
	if r, l := boxes["rounds"], boxes["last"]; r.Y+r.H > l.Y || boxes["pick/yes"].Y+boxH > r.Y {
		t.Errorf("the sequence overlaps: pick/yes %+v, rounds %+v, last %+v", boxes["pick/yes"], r, l)
	}
}
