package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/sweep"
)

// A slow agent that logs every turn it takes, by run and visit.
const loggedSlowAgent = `#!/usr/bin/env bash
cat >/dev/null
echo "$FLOW_RUN $FLOW_VISIT" >> "$STATE/turns.log"
sleep 0.4
echo "done on $FLOW_MODEL"
`

// TestSweepResumeRunsOnlyTheMissingCells: a sweep killed (SIGKILL) after 2
// of its 4 cells ended; --resume runs the other two — resuming the one
// that was cut off — and no turn of the first two again; the report then
// covers all four.
func TestSweepResumeRunsOnlyTheMissingCells(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"agents/slow.md": "---\nname: slow\ndescription: slow\ndriver: exec\ncommand: [./slow.sh]\n---\nWork.\n",
		"agents/slow.sh": loggedSlowAgent,
		"f.yaml": `name: f
agents: [./agents]
nodes:
  - {id: first, agent: slow, prompt: one}
  - {id: second, agent: slow, prompt: two}
`,
	})
	cmd := d.cmd("sweep", "f.yaml", "--model", "alpha,beta", "--repeat", "2")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waiter conc.WaitGroup
	waiter.Go(func() { _ = cmd.Wait(); close(exited) })
	defer func() { _ = cmd.Process.Kill(); waiter.Wait() }()
	var s *sweep.Sweep
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("the sweep ended before it was killed:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("two cells did not end:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
		ss := d.sweeps()
		if len(ss) == 0 {
			continue
		}
		s = ss[0]
		if r := sweep.Build(s.Snapshot()); r.Cells.Succeeded >= 2 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	s, _ = sweep.Open(s.Dir())
	ended := map[int]string{}
	for _, c := range s.Snapshot().Cells {
		if c.Status.Ended() {
			ended[c.Index] = c.Run
		}
	}
	if len(ended) != 2 || ended[1] == "" || ended[2] == "" {
		t.Fatalf("ended before the kill: %v", ended)
	}

	res, code := d.flow("sweep", "--resume", s.ID())
	if code != 0 {
		t.Fatalf("flow sweep --resume: exit %d\n%s", code, res)
	}
	var started []string
	for _, line := range strings.Split(res, "\n") {
		if strings.HasPrefix(line, "cell ") && strings.Contains(line, ": started") {
			started = append(started, strings.Fields(line)[1])
		}
	}
	if !slices.Equal(started, []string{"3/4", "4/4"}) {
		t.Errorf("the resume started cells %v, want 3/4 and 4/4\n%s", started, res)
	}
	s, _ = sweep.Open(s.Dir())
	for _, c := range s.Snapshot().Cells {
		if run, ok := ended[c.Index]; ok && c.Run != run {
			t.Errorf("cell %d ran again as %s", c.Index, c.Run)
		}
	}
	log, _ := os.ReadFile(filepath.Join(d.dir, "turns.log"))
	turns := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		turns[line]++
	}
	for _, run := range ended {
		for _, visit := range []string{"first", "second"} {
			if n := turns[run+" "+visit]; n != 1 {
				t.Errorf("an ended cell's visit %s/%s took %d turns", run, visit, n)
			}
		}
	}
	r := d.report(s)
	if r.Cells.Total != 4 || r.Cells.Succeeded != 4 || r.Assignments[0].N != 2 || r.Assignments[1].N != 2 {
		t.Errorf("the report after the resume: %+v", r.Cells)
	}
}

// pricedAgent reports a cost per turn by model: alpha $0.01, beta $0.10.
const pricedAgent = `#!/usr/bin/env bash
cat >/dev/null
case "$FLOW_MODEL" in alpha) cost=0.01 ;; beta) cost=0.10 ;; *) cost=1 ;; esac
echo "done on $FLOW_MODEL"
echo "FLOW_USAGE {\"input\": 50, \"output\": 5, \"cost\": $cost}" >&2
`

// TestSweepBudgetStartsNoCellItCannotCover: after a sweep that records
// what a run costs on each model, a sweep whose forecast exceeds
// --budget-cost runs the cells it can cover, model-major, and starts no
// other: it has no run directory.
func TestSweepBudgetStartsNoCellItCannotCover(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"agents/worker.md": "---\nname: worker\ndescription: works\ndriver: exec\ncommand: [./priced.sh]\n---\nWork.\n",
		"agents/priced.sh": pricedAgent,
		"f.yaml": `name: f
agents: [./agents]
nodes:
  - {id: first, agent: worker, prompt: one}
  - {id: second, agent: worker, prompt: two}
`,
	})
	if out, code := d.flow("sweep", "f.yaml", "--model", "alpha,beta"); code != 0 {
		t.Fatalf("the first sweep: exit %d\n%s", code, out)
	}
	// A run costs $0.02 on alpha and $0.20 on beta: the four cells come to
	// $0.44. $0.25 covers alpha, alpha, beta ($0.24), not the last beta.
	out, code := d.flow("sweep", "f.yaml", "--model", "alpha,beta", "--repeat", "2", "--budget-cost", "0.25")
	if code != 1 {
		t.Fatalf("a sweep over budget: exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(out, "cost $0.4400–$0.4400 (expected $0.4400)") || !strings.Contains(out, "exceeds the budget $0.2500") {
		t.Errorf("no cost forecast:\n%s", out)
	}
	s := d.sweeps()[1]
	f := s.Snapshot()
	spent := 0.0
	for _, c := range f.Cells {
		switch {
		case c.Index < 4 && c.Status != sweep.StatusSucceeded:
			t.Errorf("cell %d: %s %s", c.Index, c.Status, c.Note)
		case c.Index == 4 && (c.Status != sweep.StatusSkipped || c.Run != "" || !strings.Contains(c.Note, "budget")):
			t.Errorf("cell 4 was not refused: %+v", c)
		}
		if c.Outcome != nil {
			spent += *c.Outcome.Usage.Cost
		}
	}
	if spent > 0.25 || !near(spent, 0.24) {
		t.Errorf("spent $%v of $0.25", spent)
	}
	if runs, _ := os.ReadDir(s.CellsDir()); len(runs) != 3 {
		t.Errorf("%d run directories, want 3", len(runs))
	}

	// Nothing fits in $0.015: no cell starts.
	if out, code := d.flow("sweep", "f.yaml", "--model", "alpha,beta", "--budget-cost", "0.015"); code != 1 || strings.Contains(out, ": started") {
		t.Errorf("a budget that covers nothing: exit %d\n%s", code, out)
	}
	if runs, _ := os.ReadDir(d.sweeps()[2].CellsDir()); len(runs) != 0 {
		t.Errorf("%d runs started under a budget that covers none", len(runs))
	}
}

// TestSweepCtrlCStopsCleanly: Ctrl-C ends the running cell as stopped,
// starts no other, leaves the reports covering what ended, and exits 130;
// --resume then finishes the sweep.
func TestSweepCtrlCStopsCleanly(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"agents/slow.md": "---\nname: slow\ndescription: slow\ndriver: exec\ncommand: [./slow.sh]\n---\nWork.\n",
		"agents/slow.sh": loggedSlowAgent,
		"f.yaml":         "name: f\nagents: [./agents]\nnodes:\n  - {id: first, agent: slow, prompt: one}\n  - {id: second, agent: slow, prompt: two}\n",
	})
	cmd := d.cmd("sweep", "f.yaml", "--model", "alpha,beta")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "cell 1/2 alpha t1 #1: started") {
		if time.Now().After(deadline) {
			t.Fatalf("no cell started:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	interrupt(t, cmd, &bytes.Buffer{})
	s := d.sweeps()[0]
	f := s.Snapshot()
	if f.Cells[0].Status != sweep.StatusStopped || f.Cells[1].Status != sweep.StatusPending {
		t.Errorf("after Ctrl-C: cell 1 %s, cell 2 %s\n%s", f.Cells[0].Status, f.Cells[1].Status, out.String())
	}
	if r := d.report(s); r.Cells.Stopped != 1 || r.Cells.NotRun != 1 {
		t.Errorf("the report after Ctrl-C: %+v", r.Cells)
	}
	if res, code := d.flow("sweep", "--resume", s.ID()); code != 0 || d.report(s).Cells.Succeeded != 2 {
		t.Errorf("the resume: exit %d\n%s", code, res)
	}
}
