package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// TestPlanAndRunResolveAlike holds `flow plan` to what `flow run` does: for
// every node of every example, and of a called flow with models (model:
// and models:) and timeouts at every level, the model and timeout the plan
// shows are the ones the run journals, with and without --model and
// --timeout.
func TestPlanAndRunResolveAlike(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	own := t.TempDir()
	writeFiles(t, own, map[string]string{
		"caller.yaml": `name: caller
model: caller-model
models: {other: caller-pin}
timeout: 3m
agents:
  - {name: pinned, description: has a model, driver: exec, model: agent-model, command: [cat]}
  - {name: plain, description: has none, driver: exec, command: [cat]}
  - {name: other, description: has a model, driver: exec, model: other-model, command: [cat]}
nodes:
  - {id: a, agent: plain, prompt: x}
  - {id: b, flow: callee}
  - {id: c, run: [echo, c]}
  - {id: i, agent: other, prompt: x}
`,
		"callee.yaml": `name: callee
models: {plain: callee-pin}
nodes:
  - {id: d, agent: pinned, prompt: x, timeout: 40s}
  - {id: e, agent: plain, prompt: x}
  - {id: f, flow: leaf}
  - {id: j, agent: other, prompt: x}
`,
		"leaf.yaml": `name: leaf
model: leaf-model
timeout: 20s
nodes:
  - {id: g, agent: plain, prompt: x}
  - {id: h, run: [echo, h], timeout: 5s}
`,
	})
	type target struct{ dir, file string }
	var targets []target
	for _, f := range examples {
		rel, _ := filepath.Rel(root, f)
		targets = append(targets, target{root, rel})
	}
	targets = append(targets, target{own, "caller.yaml"})
	bin := flowBinary(t)
	runs := t.TempDir()
	for _, tg := range targets {
		for _, flags := range [][]string{nil, {"--timeout", "7m"}, {"--model", "cli-model"}} {
			t.Run(filepath.Base(tg.file)+fmtFlags(flags), func(t *testing.T) {
				out, err := command(bin, tg.dir, runs, append([]string{"plan", "--json", tg.file}, flags...)...).Output()
				if err != nil {
					t.Fatalf("flow plan: %v", err)
				}
				var nodes []plannedNode
				if err := json.Unmarshal(out, &nodes); err != nil {
					t.Fatal(err)
				}
				planned := map[string]plannedNode{}
				indexPlan(nodes, "", planned)
				res, err := command(bin, tg.dir, runs, append([]string{"run", "--json", tg.file}, flags...)...).Output()
				if err != nil {
					t.Fatalf("flow run: %v\n%s", err, res)
				}
				run := runDirOf(t, res)
				facts, err := rundir.ReadJournal(run)
				if err != nil {
					t.Fatal(err)
				}
				checked := 0
				for _, f := range facts {
					if f.Type != record.FactEnd || (f.Kind != schema.KindAgent && f.Kind != schema.KindRun) {
						continue
					}
					key := indices.ReplaceAllString(f.Visit, "")
					p, ok := planned[key]
					if !ok {
						t.Errorf("visit %s (%s) is not in the plan", f.Visit, key)
						continue
					}
					if f.Model != p.Model || f.Timeout != p.Timeout {
						t.Errorf("visit %s ran on model %q with timeout %q; the plan said %q and %q", f.Visit, f.Model, f.Timeout, p.Model, p.Timeout)
					}
					checked++
				}
				if checked == 0 {
					t.Fatal("no agent or run visit was compared")
				}
			})
		}
	}
}

// indices are a visit path's loop iterations and map items, which the
// plan's node paths do not have.
var indices = regexp.MustCompile(`#[0-9]+|\[[0-9]+\]`)

// indexPlan files every node of a plan under the path its visits have,
// without iterations and items.
func indexPlan(nodes []plannedNode, prefix string, into map[string]plannedNode) {
	for _, n := range nodes {
		path := n.ID
		if prefix != "" {
			path = prefix + "/" + n.ID
		}
		into[path] = n
		for _, b := range n.Branches {
			if n.Kind == schema.KindParallel {
				indexPlan(b.Nodes, path+"/"+b.Label, into)
			} else {
				indexPlan(b.Nodes, path, into)
			}
		}
		indexPlan(n.Body, path, into)
	}
}

// runDirOf finds the run directory in `flow run --json` output.
func runDirOf(t *testing.T, events []byte) string {
	t.Helper()
	var e record.Event
	if err := json.Unmarshal(events[:indexByte(events, '\n')], &e); err != nil || e.Type != record.EventRunStart {
		t.Fatalf("the first event is not the run's start: %v\n%s", err, events)
	}
	return e.Dir
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return len(b)
}

func fmtFlags(flags []string) string {
	s := ""
	for _, f := range flags {
		s += "_" + f
	}
	return s
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
