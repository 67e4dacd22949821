package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
)

const src = `name: hello
input: {names: [string]}
agents:
  - {name: shouter, description: shouts, driver: exec, command: [unused]}
nodes:
  - id: greet
    map: input.names
    max: 10
    do: [{id: say, agent: shouter, prompt: "hello ${{ item }}"}]
`

// TestLocalAndInMemoryHostsAgree runs one flow through local.Execute into
// a run directory and on the in-memory host with the same answers: the
// two journals hold the same visits with the same outcomes, and the
// values are the same.
func TestLocalAndInMemoryHostsAgree(t *testing.T) {
	dir := t.TempDir()
	plan, diags := flows.LoadSource(filepath.Join(dir, "hello.yaml"), []byte(src), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	input := map[string]any{"names": []any{"ada", "bo"}}
	res, err := local.Execute(context.Background(), plan, local.Config{Drivers: map[string]engine.Driver{"exec": shout{}}, RunsDir: filepath.Join(dir, "runs"), WorkDir: dir}, engine.Options{
		Input: input,
	})
	if err != nil || !res.OK {
		t.Fatalf("local run: %v %+v", err, res)
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	h := enginetest.New()
	h.Turns = func(tr *engine.Turn) (*engine.TurnResult, error) { return shout{}.Turn(context.Background(), tr) }
	h.Dir = dir
	mem, err := engine.Walk(context.Background(), plan, engine.Options{RunID: res.RunID, Input: input}, h, nil)
	if err != nil || !mem.OK {
		t.Fatalf("in-memory walk: %v %+v", err, mem)
	}
	if a, b := ends(facts), ends(h.Facts()); a != b {
		t.Errorf("the hosts disagree:\nlocal:\n%s\nin memory:\n%s", a, b)
	}
	vals, err := rundir.ReadValues(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := strings.TrimSpace(jsonOf(t, vals)), strings.TrimSpace(jsonOf(t, h.Values())); a != b {
		t.Errorf("values differ:\nlocal     %s\nin memory %s", a, b)
	}
}

// ends are the visits' ends, sorted (a local map ends its items in any
// order), with their outputs.
func ends(facts []*record.Fact) string {
	var lines []string
	for _, f := range facts {
		if f.Type != record.FactEnd {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %v %v", f.Visit, f.Output, f.OK != nil && *f.OK))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
