package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
)

// refusedOnTemporal lists the examples a run on Temporal refuses today, each
// with the words of its documented refusal (docs/temporal.md). When one of
// them starts to run there, its refusal no longer comes, the test fails, and
// the example must leave this list to be compared like the others.
var refusedOnTemporal = map[string]string{
	// The workflow has no workspace: a flow with isolation: is refused
	// before it starts.
	"writers.yaml": "isolation",
}

// visitEnd is how one visit ended: ok or its failure's kind, and its output.
type visitEnd struct {
	End    string
	Output any
}

// parity is what two hosts must agree on for one run of a flow.
type parity struct {
	Status rundir.Status
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
	info := runs[0]
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
	for _, v := range rundir.Visits(info.Facts) {
		e := visitEnd{End: "unended"}
		if v.End != nil {
			e.End, e.Output = "ok", roundTrip(t, v.End.Output)
			if !v.End.Succeeded() {
				e.End = string(v.End.Error.Kind)
			}
		}
		p.Visits[v.Start.Visit] = e
	}
	return p
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
// with its documented reason.
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
			if want.Status != rundir.StatusSucceeded {
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
		})
	}
}
