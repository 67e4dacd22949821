package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// valuesFlow has a node of every kind whose value a later expression (a
// sweep's score) reads: a map, a parallel block, a command, a choice and
// a loop.
const valuesFlow = `name: f
input: {items: [string]}
` + testAgents + `nodes:
  - id: each
    map: input.items
    max: 3
    do: [{id: look, agent: worker, prompt: "${{ item }}"}]
  - id: both
    parallel:
      x: [{id: a, agent: worker, prompt: a}]
      y: [{id: b, agent: worker, prompt: b}]
  - {id: t, run: [echo, "${{ both.ok }}"]}
  - id: pick
    choice:
      - when: t.output.passed
        do: [{id: yes, agent: worker, prompt: yes}]
      - else: [{id: no, agent: worker, prompt: no}]
  - id: fix
    loop: {until: 'true', max: 3}
    do: [{id: step, agent: worker, prompt: go}]
`

// TestReplayValuesAreTheLocalRunsValues: the node values the mirror
// rebuilds from a workflow's facts are those a local run of the same flow
// writes into values.json; a journal that lacks a leaf's end runs nothing
// and is refused.
func TestReplayValuesAreTheLocalRunsValues(t *testing.T) {
	input := map[string]any{"items": []any{"x", "y"}}
	h := newHarness(t, &scripted{})
	out, facts := h.run(valuesFlow, input)
	if !out.OK {
		t.Fatalf("the workflow failed: %+v", out.Failure)
	}
	got, err := replayValues(context.Background(), h.snap, LoadOptions{}, facts)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte(valuesFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	res, err := engine.Execute(context.Background(), plan, engine.Options{Drivers: map[string]engine.Driver{"exec": &scripted{}},
		Commands: echoCommands{}, RunsDir: t.TempDir(), WorkDir: dir, Input: input})
	if err != nil || !res.OK {
		t.Fatalf("the local run: %+v, %v", res, err)
	}
	want, err := rundir.ReadValues(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("replayed values:\n%s\nthe local run's:\n%s", g, w)
	}

	var cut []*rundir.Fact // the journal without the loop's turn's end
	for _, f := range facts {
		if !(f.Type == rundir.FactEnd && f.Visit == "fix#1/step") {
			cut = append(cut, f)
		}
	}
	if _, err := replayValues(context.Background(), h.snap, LoadOptions{}, cut); !errors.Is(err, errReplayRan) {
		t.Errorf("replaying a journal without a leaf's end: %v, want it refused", err)
	}
	if n := h.driver.attempts["fix#1/step"]; n != 1 {
		t.Errorf("the loop's turn ran %d times, want once (the replay runs nothing)", n)
	}
}

// TestWorkflowRunsTheSnapshotsModelsByAgent: a sweep cell's assignment of
// a model to one agent (Settings.Models) holds in the workflow; the other
// agents run on the run's model.
func TestWorkflowRunsTheSnapshotsModelsByAgent(t *testing.T) {
	h := newHarness(t, &scripted{})
	out, facts := h.runWith(`name: f
agents:
  - {name: worker, description: does work, driver: exec, command: [x]}
  - {name: other, description: does other work, driver: exec, command: [x]}
nodes:
  - {id: a, agent: worker, prompt: go}
  - {id: b, agent: other, prompt: go}
`, nil, rundir.Settings{Model: "everyone", Models: map[string]string{"worker": "assigned"}, Concurrency: 4, TurnTimeout: "1m"})
	if !out.OK {
		t.Fatalf("run failed: %+v", out.Failure)
	}
	models := map[string]string{}
	for _, f := range facts {
		if f.Type == rundir.FactEnd && f.Kind == schema.KindAgent {
			models[f.Visit] = f.Model
		}
	}
	if want := map[string]string{"a": "assigned", "b": "everyone"}; !reflect.DeepEqual(models, want) {
		t.Errorf("the turns ran on %v, want %v", models, want)
	}
}
