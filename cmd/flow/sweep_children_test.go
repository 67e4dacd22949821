package main

import (
	"errors"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestSweepForecastCountsChildren: a flow whose lead delegates to a
// helper, on the openai driver against the model server, every request
// billed 1,000 tokens: the lead's turn is two requests (its call and its
// answer), the helper's one. After one run, flow plan shows the lead's
// children from history, and a sweep forecasts a cell at 3,000 tokens,
// the lead's 2,000 with the helper's 1,000 (counting only the flow's own
// nodes, it was 2,000). Under a budget of 7,000 at concurrency 4, the
// reservations let two cells run, the rest are skipped, and what the
// server billed stays within the budget: nothing is overspent, and no
// cell is blamed for starting with no forecast.
func TestSweepForecastCountsChildren(t *testing.T) {
	const request = 1000
	s := modelserver.Start(t)
	var billed atomic.Int64
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			billed.Add(request)
		}
		reply := modelserver.Reply{Text: "helper-said: it is the clock", Input: request - 10, Output: 10, Delay: 200 * time.Millisecond}
		switch tool := delegatetest.ToolName(r); {
		case tool != "" && strings.Contains(string(r.Body), "helper-said"):
			reply.Text = "the lead heard the helper"
		case tool != "":
			reply.Text, reply.ToolCall = "", &modelserver.ToolCall{Name: tool, Arguments: `{"agent":"helper","task":"look at the clock"}`}
		}
		return reply
	})
	agent := func(name string) string {
		return "---\nname: " + name + "\ndescription: the " + name + "\ndriver: openai\nbase_url: " + s.URL() +
			"/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n---\nYou " + name + ".\n"
	}
	d := newSweepDir(t, map[string]string{
		"agents/lead.md":   agent("lead"),
		"agents/helper.md": agent("helper"),
		"f.yaml": "name: f\nagents: [./agents]\nnodes:\n  - id: lead\n    agent: lead\n    prompt: Why is the test flaky?\n" +
			"    delegate: {agents: [helper]}\n",
	})
	flow := func(args ...string) (string, error) {
		c := d.cmd(args...)
		c.Env = append(c.Env, "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := flow("run", "f.yaml", "--model", "test-model"); err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	if got := billed.Load(); got != 3*request {
		t.Fatalf("one run billed %d tokens, want %d", got, 3*request)
	}
	billed.Store(0)

	out, err := flow("plan", "f.yaml", "--model", "test-model")
	if err != nil || !strings.Contains(out, "    children from 1 earlier run(s): helper on test-model 1 a run, tokens 1000, cost unknown\n") {
		t.Errorf("flow plan does not forecast the lead's children (%v):\n%s", err, out)
	}
	out, err = flow("plan", "f.yaml", "--model", "test-model", "--json")
	if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "),
		`"delegates": { "agents": [ "helper" ], "earlier_runs": 1, "children": [ { "agent": "helper", "model": "test-model", "children": { "known": true, "low": 1, "expected": 1, "high": 1 }, "tokens": { "known": true, "low": 1000, "expected": 1000, "high": 1000 }`) {
		t.Errorf("flow plan --json does not forecast the lead's children (%v):\n%s", err, out)
	}
	out, err = flow("sweep", "f.yaml", "--model", "test-model", "--repeat", "4", "--dry-run")
	if err != nil || !strings.Contains(out, "forecast from 1 earlier run(s): tokens 12000–12000 (expected 12000)") {
		t.Errorf("flow sweep --dry-run does not forecast 3,000 tokens a cell (%v):\n%s", err, out)
	}

	const budget = 7000
	out, err = flow("sweep", "f.yaml", "--model", "test-model", "--repeat", "4", "--concurrency", "4", "--budget-tokens", "7000")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("flow sweep: %v (want exit 1: cells skipped for the budget)\n%s", err, out)
	}
	t.Logf("the server billed %d tokens under a sweep budget of %d", billed.Load(), budget)
	if got := billed.Load(); got > budget {
		t.Errorf("the server billed %d tokens under a sweep budget of %d: the reservations did not count the children\n%s", got, budget, out)
	}
	if strings.Contains(out, "no forecast") || strings.Contains(out, "overspent") {
		t.Errorf("the sweep blames a missing forecast, or overspent:\n%s", out)
	}
	ss := d.sweeps()
	if len(ss) != 1 {
		t.Fatalf("%d sweeps", len(ss))
	}
	r := d.report(ss[0])
	if r.Spent.Tokens() != billed.Load() || r.Cells.Skipped != 2 {
		t.Errorf("the report: spent %d (billed %d), cells %+v", r.Spent.Tokens(), billed.Load(), r.Cells)
	}
}
