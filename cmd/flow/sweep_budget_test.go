package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/modelserver"
)

// TestSweepBudgetCountsRunningCells: a sweep of 8 one-turn cells at
// concurrency 4 under a token budget, on the openai driver against the
// model server. The cells nothing priced do not start together: the sum
// the server billed stays within the budget plus one turn, the report's
// total is the server's sum, and the hint names the flag that was given.
func TestSweepBudgetCountsRunningCells(t *testing.T) {
	const turn, budget = 1000, 2500
	s := modelserver.Start(t)
	var billed atomic.Int64
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			billed.Add(turn)
		}
		return modelserver.Reply{Text: "noted", Input: turn - 10, Output: 10, Delay: 300 * time.Millisecond}
	})
	agent := "---\nname: helper\ndescription: Helps with the test\ndriver: openai\nbase_url: " + s.URL() +
		"/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n---\nYou help, briefly.\n"
	d := newSweepDir(t, map[string]string{
		"agents/helper.md": agent,
		"f.yaml":           "name: f\nagents: [./agents]\nnodes:\n  - {id: ask, agent: helper, prompt: hello}\n",
	})
	cmd := d.cmd("sweep", "f.yaml", "--model", "test-model", "--repeat", "8", "--concurrency", "4", "--budget-tokens", "2500")
	cmd.Env = append(cmd.Env, "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("flow sweep: %v (want exit 1: cells skipped for the budget)\n%s", err, out)
	}
	t.Logf("the server billed %d tokens under a sweep budget of %d", billed.Load(), budget)
	if got := billed.Load(); got > budget+turn {
		t.Fatalf("the server billed %d tokens under a sweep budget of %d (one turn is %d)\n%s", got, budget, turn, out)
	}
	ss := d.sweeps()
	if len(ss) != 1 {
		t.Fatalf("%d sweeps", len(ss))
	}
	r := d.report(ss[0])
	if r.Spent.Tokens() != billed.Load() {
		t.Fatalf("the report's total is %d tokens, the server billed %d", r.Spent.Tokens(), billed.Load())
	}
	if r.Cells.Skipped == 0 || r.Budget == nil || r.Budget.Tokens != budget {
		t.Fatalf("the report's cells %+v, budget %+v", r.Cells, r.Budget)
	}
	if !strings.Contains(out, "--budget-tokens …") || strings.Contains(out, "--budget-cost …") {
		t.Fatalf("the hint must name --budget-tokens, the flag given:\n%s", out)
	}
	unpriced := 0
	for _, c := range ss[0].Snapshot().Cells {
		if c.Unpriced {
			unpriced++
		}
	}
	if unpriced != 1 {
		t.Errorf("%d cells started with no forecast; want 1 (the first prices the rest)", unpriced)
	}
	md, _ := os.ReadFile(filepath.Join(ss[0].Dir(), "report.md"))
	if !strings.Contains(string(md), "Spent: ") {
		t.Errorf("report.md does not say what the sweep spent:\n%s", md)
	}
}
