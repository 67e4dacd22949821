package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
)

// refusedOnTemporal lists the examples a run on Temporal refuses today, each
// with the words of its documented refusal (docs/temporal.md). When one of
// them starts to run there, its refusal no longer comes, the test fails, and
// the example must leave this list to be compared like the others.
var refusedOnTemporal = map[string]string{}

// randomOutputs are the visits of an example whose output is random by
// construction, on any host: writers.yaml's scratch step names the
// directory mktemp made. They must end alike; their outputs are not
// compared.
var randomOutputs = map[string][]string{"writers.yaml": {"scratch"}}

// normalise drops from p what names one run rather than what it did: the
// outputs of randomOutputs, and each isolated scope's branch (named for
// the run id) and commit (its id hashes the commit's time).
func normalise(p *parity, example string) {
	for _, v := range randomOutputs[example] {
		if e, ok := p.Visits[v]; ok {
			e.Output = "<random>"
			p.Visits[v] = e
		}
		if m, ok := p.Values[v].(map[string]any); ok {
			m["output"] = "<random>"
		}
	}
	for _, v := range p.Values {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		scopes, _ := m["worktree"].([]any)
		if w, ok := m["worktree"].(map[string]any); ok {
			scopes = append(scopes, w)
		}
		for _, sc := range scopes {
			if w, ok := sc.(map[string]any); ok {
				delete(w, "branch")
				delete(w, "commit")
			}
		}
	}
}

// visitEnd is how one visit ended: ok or its failure's kind, and its output.
type visitEnd struct {
	End    string
	Output any
}

// parity is what two hosts must agree on for one run of a flow.
type parity struct {
	Status record.Status
	Output any                 // output.json
	Values map[string]any      // values.json
	Visits map[string]visitEnd // by visit path
}

// parityOf reads the one run in runsDir.
func parityOf(t *testing.T, runsDir string) parity {
	t.Helper()
	runs, err := rundir.List(runsDir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("want one run in %s, have %d (%v)", runsDir, len(runs), err)
	}
	return parityOfFacts(t, runs[0])
}

// parityOfFacts reads a run's status, output, values and visits.
func parityOfFacts(t *testing.T, info *rundir.RunInfo) parity {
	t.Helper()
	p := parity{Status: info.Status, Visits: map[string]visitEnd{}}
	b, err := os.ReadFile(filepath.Join(info.Dir, "output.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p.Output); err != nil {
		t.Fatal(err)
	}
	values, err := rundir.ReadValues(info.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// Where a long answer was stored (_file) names the run's directory:
	// the one place values.json must differ.
	p.Values = valuesWithout(values)
	p.Visits = visitEnds(t, info.Facts)
	return p
}

// visitEnds is how each visit of facts ended, by visit path.
func visitEnds(t *testing.T, facts []*record.Fact) map[string]visitEnd {
	t.Helper()
	ends := map[string]visitEnd{}
	for _, v := range rundir.Visits(facts) {
		e := visitEnd{End: "unended"}
		if v.End != nil {
			e.End, e.Output = "ok", roundTrip(t, v.End.Output)
			if !v.End.Succeeded() {
				e.End = string(v.End.Error.Kind)
			}
		}
		ends[v.Start.Visit] = e
	}
	return ends
}

// roundTrip gives v as JSON decodes it, so that an output read from the
// local journal and one that came back through Temporal compare alike.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// TestEveryExampleGivesTheSameOutcomeLocallyAndOnTemporal runs every example
// with its default inputs twice, with `flow run` and with `flow run
// --temporal` on one real dev server and one real `flow worker`, and holds
// the two runs to the same status, output.json, values.json and visits (the
// same paths, each ending the same way with the same output). Run ids,
// times, workers and run directories differ and are not compared: parity
// reads none of them. An example in refusedOnTemporal must be refused there
// with its documented reason. Each example that runs on both is also walked
// on the in-memory host, its leaves answered as they were locally (inMemory).
func TestEveryExampleGivesTheSameOutcomeLocallyAndOnTemporal(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	srv := devserver.Start(t)
	bin := flowBinary(t)
	startWorker(t, bin, root, srv.Address, "parity")
	flowRun := func(runsDir string, args ...string) ([]byte, error) {
		cmd := exec.Command(bin, append([]string{"run"}, args...)...)
		// TMPDIR as in TestExamplesValidateAndRun: an example's scratch
		// files stay in the test's directories.
		cmd.Dir, cmd.Env = root, append(temporalEnv(runsDir), "TMPDIR="+runsDir)
		return cmd.CombinedOutput()
	}
	for _, f := range files {
		name := filepath.Base(f)
		rel := filepath.Join("examples", name)
		t.Run(name, func(t *testing.T) {
			local, remote := t.TempDir(), t.TempDir()
			if out, err := flowRun(local, rel); err != nil {
				t.Fatalf("flow run %s: %v\n%s", rel, err, out)
			}
			out, err := flowRun(remote, "--temporal", srv.Address, "--task-queue", "parity", rel)
			if reason, refused := refusedOnTemporal[name]; refused {
				if err == nil || !strings.Contains(string(out), "refused") || !strings.Contains(string(out), reason) {
					t.Fatalf("flow run --temporal %s: %v, want a refusal naming %s (or it runs now: take it off refusedOnTemporal)\n%s", rel, err, reason, out)
				}
				t.Logf("refused on Temporal, as documented:\n%s", out)
				return
			}
			if err != nil {
				t.Fatalf("flow run --temporal %s: %v\n%s\n%s", rel, err, out, srv.Log())
			}
			want, got := parityOf(t, local), parityOf(t, remote)
			normalise(&want, name)
			normalise(&got, name)
			if want.Status != record.StatusSucceeded {
				t.Fatalf("the local run is %s", want.Status)
			}
			if len(want.Visits) == 0 {
				t.Fatal("the local run recorded no visit")
			}
			t.Logf("%d visits compared", len(want.Visits))
			if got.Status != want.Status {
				t.Errorf("status on Temporal %s, locally %s", got.Status, want.Status)
			}
			if !reflect.DeepEqual(got.Output, want.Output) {
				t.Errorf("output.json on Temporal\n%v\nlocally\n%v", got.Output, want.Output)
			}
			if !reflect.DeepEqual(got.Values, want.Values) {
				t.Errorf("values.json on Temporal\n%v\nlocally\n%v", got.Values, want.Values)
			}
			for v, w := range want.Visits {
				if g, ok := got.Visits[v]; !ok {
					t.Errorf("visit %s ran locally, not on Temporal", v)
				} else if !reflect.DeepEqual(g, w) {
					t.Errorf("visit %s on Temporal %+v, locally %+v", v, g, w)
				}
			}
			for v := range got.Visits {
				if _, ok := want.Visits[v]; !ok {
					t.Errorf("visit %s ran on Temporal, not locally", v)
				}
			}
			if len(randomOutputs[name]) == 0 {
				// writers.yaml's isolated scopes walk in memory in
				// engine/enginetest (TestIsolatedScopesGoThroughTheWorkspace).
				inMemory(t, root, rel, local, want)
			}
		})
	}
}

// inMemory walks the example on the in-memory host (engine/enginetest),
// each agent turn and command answered with what it answered in the local
// run in localRuns, and holds the walk to the local run's values and
// visits: given the same answers, the walker takes the same path on a host
// of plain function calls.
func inMemory(t *testing.T, root, rel, localRuns string, want parity) {
	t.Helper()
	runs, err := rundir.List(localRuns)
	if err != nil || len(runs) != 1 {
		t.Fatalf("want one local run, have %d (%v)", len(runs), err)
	}
	answers := map[string]*record.Fact{}
	for _, v := range rundir.Visits(runs[0].Facts) {
		if v.End != nil && (v.Start.Kind == "agent" || v.Start.Kind == "run") {
			answers[v.Start.Visit] = v.End
		}
	}
	answer := func(visit string) (*record.Fact, error) {
		if e := answers[visit]; e != nil && e.Succeeded() {
			return e, nil
		}
		return nil, fmt.Errorf("visit %s did not succeed locally: nothing to answer it with", visit)
	}
	h := enginetest.New()
	h.Turns = func(turn *engine.Turn) (*engine.TurnResult, error) {
		e, err := answer(turn.Visit)
		if err != nil {
			return nil, err
		}
		out, ok := e.Output.(string)
		if !ok { // a structured answer, as the agent wrote it
			b, _ := json.Marshal(e.Output)
			out = string(b)
		}
		return &engine.TurnResult{Status: engine.Completed, Output: out}, nil
	}
	h.Commands = func(c *engine.Command) (*engine.CommandResult, error) {
		e, err := answer(c.Visit)
		if err != nil {
			return nil, err
		}
		var r engine.CommandResult
		b, _ := json.Marshal(e.Output)
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("the local output of %s is not a command's: %w", c.Visit, err)
		}
		return &r, nil
	}
	plan, diags := flows.Load(filepath.Join(root, rel), flows.Options{Disk: osdisk.OS, WorkDir: root, UserAgentDirs: []string{}, Drivers: []string{"exec", "pi", "claude", "codex", "openai"}})
	if diags.HasErrors() {
		t.Fatalf("%s does not load:\n%s", rel, diags.Error())
	}
	h.Dir = root
	res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "in-memory"}, h, nil)
	if err != nil || !res.OK {
		t.Fatalf("the in-memory walk: %v %+v", err, res)
	}
	if got := roundTrip(t, h.Output()); !reflect.DeepEqual(got, want.Output) {
		t.Errorf("the in-memory output\n%v\nlocally\n%v", got, want.Output)
	}
	if got := valuesWithout(h.Values()); !reflect.DeepEqual(got, want.Values) {
		t.Errorf("the in-memory values\n%v\nlocally\n%v", got, want.Values)
	}
	if got := visitEnds(t, h.Facts()); !reflect.DeepEqual(got, want.Visits) {
		t.Errorf("the in-memory visits\n%v\nlocally\n%v", got, want.Visits)
	}
}
