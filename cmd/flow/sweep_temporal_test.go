package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/sweep"
)

// temporalSweepProject is qualityProject's flow over two tasks, its
// agents a little slow so that cells overlap: the solver's answers depend
// on $FLOW_MODEL (bronze is wrong on task 3), each model has its price,
// and the score reads a node's value.
func temporalSweepProject(t *testing.T) *sweepDir {
	agent := strings.Replace(qualityAgent, "turn=$(cat)\n", "turn=$(cat)\nsleep 0.3\n", 1)
	return newSweepDir(t, map[string]string{
		"agents/solver.md":  "---\nname: solver\ndescription: solves\ndriver: exec\nmodel: pinned-model\ncommand: [./solver.sh]\n---\nSolve.\n",
		"agents/checker.md": "---\nname: checker\ndescription: checks\ndriver: exec\ncommand: [./solver.sh]\n---\nCheck.\n",
		"agents/solver.sh":  agent,
		"tasks.jsonl":       "{\"n\": 1}\n{\"n\": 3}\n",
		"f.yaml": `name: f
agents: [./agents]
input: {n: integer}
sweep:
  inputs: tasks.jsonl
  score: solve.output == "right"
nodes:
  - {id: solve, agent: solver, reads: [input], prompt: Solve.}
  - {id: check, agent: checker, reads: [input, solve], prompt: Check.}
`,
	})
}

// comparable is a sweep's report.json without what differs from one
// sweep to another of the same grid: its id, when it was written, and
// wall times.
func comparable(t *testing.T, s *sweep.Sweep) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir(), "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	delete(r, "sweep")
	delete(r, "updated")
	if spent, ok := r["spent"].(map[string]any); ok {
		delete(spent, "wall_ms")
		delete(spent, "busy_ms")
	}
	for _, key := range []string{"assignments", "by_params"} {
		rows, _ := r[key].([]any)
		for _, row := range rows {
			delete(row.(map[string]any), "wall_p50_ms")
			delete(row.(map[string]any), "wall_p95_ms")
		}
	}
	return r
}

// TestTemporalSweepSpreadsCellsOverTheWorkers: flow sweep --temporal of 4
// cells (the solver on gold or bronze, two tasks) over two flow workers
// that take one visit at a time: every cell ends; each worker ran the
// leaves of at least one cell (the end facts' worker names its queue);
// each turn ran on its cell's model; and report.json is that of a local
// sweep of the same grid — the same assignments, counts, fields and
// figures (bronze fails task 3 there as here), wall times aside.
func TestTemporalSweepSpreadsCellsOverTheWorkers(t *testing.T) {
	srv := devserver.Start(t)
	d := temporalSweepProject(t)
	grid := []string{"sweep", "f.yaml", "--assign", "solver=gold,bronze", "--concurrency", "4"}
	if out, code := d.flow(grid...); code != 0 {
		t.Fatalf("the local sweep: exit %d\n%s", code, out)
	}
	workers := []*os.Process{
		startWorker(t, d.bin, d.dir, srv.Address, "sweep", "--concurrency", "1").Process,
		startWorker(t, d.bin, d.dir, srv.Address, "sweep", "--concurrency", "1").Process,
	}
	start := time.Now()
	out, code := d.flow(append(grid, "--temporal", srv.Address, "--task-queue", "sweep")...)
	if code != 0 {
		t.Fatalf("flow sweep --temporal: exit %d\n%s\n%s", code, out, srv.Log())
	}
	t.Logf("the sweep on Temporal took %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out, "cells run on Temporal at "+srv.Address+", task queue sweep") {
		t.Errorf("flow sweep --temporal does not say where the cells run:\n%s", out)
	}
	ss := d.sweeps()
	if len(ss) != 2 {
		t.Fatalf("%d sweeps, want the local one and the one on Temporal", len(ss))
	}
	local, remote := ss[0], ss[1]
	f := remote.Snapshot()
	if f.Temporal == nil || f.Temporal.Address != srv.Address || f.Temporal.TaskQueue != "sweep" {
		t.Errorf("sweep.json records the server as %+v", f.Temporal)
	}
	if len(f.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(f.Cells))
	}
	ran := map[int][]int{} // worker pid -> the cells whose leaves it ran
	for _, c := range f.Cells {
		if !c.Status.Ended() {
			t.Errorf("cell %d (%s, task %s) is %s: %s", c.Index, c.Assignment, c.Task, c.Status, c.Note)
			continue
		}
		snap, err := rundir.ReadSnapshot(filepath.Join(remote.CellsDir(), c.Run))
		if err != nil || snap.Temporal == nil {
			t.Errorf("cell %d's run directory is not the mirror of a Temporal run: %+v, %v", c.Index, snap, err)
		}
		facts, err := rundir.ReadJournal(filepath.Join(remote.CellsDir(), c.Run))
		if err != nil {
			t.Fatal(err)
		}
		model := strings.TrimPrefix(c.Assignment, "solver=")
		for _, e := range facts {
			if e.Type != record.FactEnd || e.Kind != schema.KindAgent {
				continue
			}
			if e.Node == "solve" && e.Model != model {
				t.Errorf("cell %d (%s): the solver ran on %q", c.Index, c.Assignment, e.Model)
			}
			found := false
			for _, w := range workers {
				if strings.HasPrefix(e.Worker, "sweep@") && strings.Contains(e.Worker, fmt.Sprintf("-%d-", w.Pid)) {
					ran[w.Pid], found = append(ran[w.Pid], c.Index), true
				}
			}
			if !found {
				t.Errorf("cell %d: %s ran on %q, not on one of the flow workers", c.Index, e.Visit, e.Worker)
			}
		}
	}
	for _, w := range workers {
		if len(ran[w.Pid]) == 0 {
			t.Errorf("worker %d ran no cell's visits (cells by worker: %v)", w.Pid, ran)
		}
	}
	want, got := comparable(t, local), comparable(t, remote)
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("report.json of the sweep on Temporal:\n%s\nof the local sweep:\n%s", g, w)
	}
	if rows, _ := want["assignments"].([]any); len(rows) != 2 || want["cells"].(map[string]any)["succeeded"] != float64(3) {
		t.Errorf("the local sweep is not the one this test expects: %v", want)
	}
}

// TestTemporalSweepResumeReattachesToItsCells: a flow sweep --temporal
// killed while its two cells run on a worker leaves them going on
// Temporal; flow sweep --resume, without --temporal, goes back to the
// server the sweep recorded, re-attaches to both, and every cell ends
// with nothing run twice.
func TestTemporalSweepResumeReattachesToItsCells(t *testing.T) {
	srv := devserver.Start(t)
	d := newSweepDir(t, map[string]string{
		"agents/slow.md": "---\nname: slow\ndescription: slow\ndriver: exec\ncommand: [./slow.sh]\n---\nWork.\n",
		"agents/slow.sh": "#!/usr/bin/env bash\ncat >/dev/null\necho \"start $FLOW_MODEL\" >> ran\nsleep 2\necho \"end $FLOW_MODEL\" >> ran\necho done\n",
		"f.yaml":         "name: f\nagents: [./agents]\nnodes:\n  - {id: work, agent: slow, prompt: go}\n",
	})
	startWorker(t, d.bin, d.dir, srv.Address, "resume")
	cmd := d.cmd("sweep", "f.yaml", "--model", "m1,m2", "--concurrency", "2", "--temporal", srv.Address, "--task-queue", "resume")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(d.dir, "ran"))
		if strings.Count(string(b), "start") == 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the cells never started:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL) // the sweep dies; its cells go on on Temporal
	_ = cmd.Wait()
	s := d.sweeps()[0]
	out, code := d.flow("sweep", "--resume", s.ID())
	if code != 0 {
		t.Fatalf("flow sweep --resume: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "cells run on Temporal at "+srv.Address) {
		t.Errorf("the resume did not go back to the sweep's server:\n%s", out)
	}
	for _, c := range d.sweeps()[0].Snapshot().Cells {
		if c.Status != sweep.StatusSucceeded {
			why := c.Note
			if o := c.Outcome; o != nil {
				why = fmt.Sprintf("%s: %s (run %s, status %s)", o.Failure, o.Message, c.Run, o.Status)
			}
			t.Errorf("cell %d is %s after the resume: %s\n%s", c.Index, c.Status, why, out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(d.dir, "ran"))
	for _, m := range []string{"m1", "m2"} {
		if n, e := strings.Count(string(b), "start "+m+"\n"), strings.Count(string(b), "end "+m+"\n"); n != 1 || e != 1 {
			t.Errorf("the turn on %s started %d and ended %d times, want once: the resume ran it again\n%s", m, n, e, b)
		}
	}
}

// TestTemporalSweepResumeOfCellsNoFactReached: a flow sweep --temporal
// killed before any fact of its cells came back (no worker had taken
// them: their journals are empty) leaves the cells started on Temporal;
// once a worker is up, flow sweep --resume re-attaches to them and every
// cell succeeds, each turn run once. Before, the resume's reopening of an
// empty journal took the run's lock against itself and the cell failed —
// the cause of TestTemporalSweepResumeReattachesToItsCells failing under
// load, when the sweep died before its first mirror poll.
func TestTemporalSweepResumeOfCellsNoFactReached(t *testing.T) {
	srv := devserver.Start(t)
	d := newSweepDir(t, map[string]string{
		"agents/slow.md": "---\nname: slow\ndescription: slow\ndriver: exec\ncommand: [./slow.sh]\n---\nWork.\n",
		"agents/slow.sh": "#!/usr/bin/env bash\ncat >/dev/null\necho \"start $FLOW_MODEL\" >> ran\nsleep 1\necho \"end $FLOW_MODEL\" >> ran\necho done\n",
		"f.yaml":         "name: f\nagents: [./agents]\nnodes:\n  - {id: work, agent: slow, prompt: go}\n",
	})
	cmd := d.cmd("sweep", "f.yaml", "--model", "m1,m2", "--concurrency", "2", "--temporal", srv.Address, "--task-queue", "late")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		snaps, _ := filepath.Glob(filepath.Join(d.dir, ".flow", "sweeps", "*", "cells", "*", "snapshot.json"))
		started := 0
		for _, p := range snaps {
			if snap, err := rundir.ReadSnapshot(filepath.Dir(p)); err == nil && snap.Temporal != nil {
				started++
			}
		}
		if started == 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the cells never started on Temporal:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	startWorker(t, d.bin, d.dir, srv.Address, "late")
	s := d.sweeps()[0]
	out, code := d.flow("sweep", "--resume", s.ID())
	if code != 0 {
		t.Fatalf("flow sweep --resume: exit %d\n%s", code, out)
	}
	for _, c := range d.sweeps()[0].Snapshot().Cells {
		if c.Status != sweep.StatusSucceeded {
			why := c.Note
			if o := c.Outcome; o != nil {
				why = fmt.Sprintf("%s: %s (run %s, status %s)", o.Failure, o.Message, c.Run, o.Status)
			}
			t.Errorf("cell %d is %s after the resume: %s\n%s", c.Index, c.Status, why, out)
		}
	}
	b, _ := os.ReadFile(filepath.Join(d.dir, "ran"))
	for _, m := range []string{"m1", "m2"} {
		if n := strings.Count(string(b), "start "+m+"\n"); n != 1 {
			t.Errorf("the turn on %s started %d times, want once\n%s", m, n, b)
		}
	}
}
