package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// scripted is a driver whose turns end as a script says, by visit path:
// an answer, a failure, or a wait for its context (a slow agent).
type scripted struct {
	mu       sync.Mutex
	attempts map[string]int
	sessions []string // the session each turn was given, in order
	script   func(visit string, attempt int) (answer string, err error)
}

// errHang makes a turn wait until its context ends; errGreedy too, after
// it reported 500 tokens spent.
var (
	errHang   = errors.New("hang")
	errGreedy = errors.New("greedy")
)

func (d *scripted) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	d.mu.Lock()
	if d.attempts == nil {
		d.attempts = map[string]int{}
	}
	d.attempts[t.Visit]++
	n := d.attempts[t.Visit]
	d.sessions = append(d.sessions, t.Visit+"="+t.Session)
	d.mu.Unlock()
	t.Progress(engine.Progress{Activity: "thinking", Tokens: 5})
	answer, err := "ok "+t.Visit, error(nil)
	if d.script != nil {
		answer, err = d.script(t.Visit, n)
	}
	in := int64(10)
	if errors.Is(err, errGreedy) {
		t.Progress(engine.Progress{Activity: "writing", Tokens: 500})
		err = errHang
	}
	switch {
	case errors.Is(err, errHang):
		<-ctx.Done()
		return &engine.TurnResult{Status: engine.Aborted, Usage: record.Usage{Input: &in}}, context.Cause(ctx)
	case err != nil:
		return &engine.TurnResult{Status: engine.Failed, Diagnostics: []string{err.Error()}, Usage: record.Usage{Input: &in}}, nil
	}
	return &engine.TurnResult{Status: engine.Completed, Output: answer, Usage: record.Usage{Input: &in}, Session: fmt.Sprintf("s%d", n)}, nil
}

type echoCommands struct{}

func (echoCommands) Run(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	return &engine.CommandResult{Passed: true, Report: strings.Join(c.Argv, " ")}, nil
}

const testAgents = `agents:
  - {name: worker, description: does work, driver: exec, command: [x]}
`

// harness is a test workflow environment with the run workflow and real
// activities (local.Leaves over a scripted driver) in process.
type harness struct {
	t      *testing.T
	env    *testsuite.TestWorkflowEnvironment
	driver *scripted
	queues []string         // the task queue of each activity, in order
	snap   *rundir.Snapshot // the run's, once run
	mu     sync.Mutex
}

func newHarness(t *testing.T, d *scripted) *harness {
	var suite testsuite.WorkflowTestSuite
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment(), driver: d}
	h.env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	acts := &Activities{Leaves: local.Leaves{Drivers: map[string]engine.Driver{"exec": d}, Commands: echoCommands{}},
		RunsDir: t.TempDir(), Queue: "w1", Host: "h1"}
	h.env.RegisterActivityWithOptions(acts.Turn, activity.RegisterOptions{Name: TurnActivity})
	h.env.RegisterActivityWithOptions(acts.Command, activity.RegisterOptions{Name: CommandActivity})
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.queues = append(h.queues, info.TaskQueue)
	})
	h.env.SetTestTimeout(30 * time.Second)
	return h
}

// run runs the flow src to its end and returns the workflow's output and
// facts.
func (h *harness) run(src string, input any) (*RunOutput, []*record.Fact) {
	h.t.Helper()
	return h.runWith(src, input, rundir.Settings{Concurrency: 4, TurnTimeout: "1m"})
}

// runWith is run with the run's settings (its WorkDir is the flow's).
func (h *harness) runWith(src string, input any, settings rundir.Settings) (*RunOutput, []*record.Fact) {
	h.t.Helper()
	dir := h.t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		h.t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{UserAgentDirs: []string{}})
	if diags.HasErrors() {
		h.t.Fatalf("load:\n%s", diags.Error())
	}
	in, err := plan.Root.CheckInput(input)
	if err != nil {
		h.t.Fatal(err)
	}
	settings.WorkDir = dir
	snap := local.NewSnapshot("run-1", plan, in, settings)
	h.snap = snap
	h.env.ExecuteWorkflow(WorkflowName, &RunInput{Snapshot: snap, Timing: Timing{Heartbeat: time.Minute}})
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("the workflow did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("workflow error: %v", err)
	}
	var out RunOutput
	if err := h.env.GetWorkflowResult(&out); err != nil {
		h.t.Fatal(err)
	}
	v, err := h.env.QueryWorkflow(QueryFacts, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var page FactsPage
	if err := v.Get(&page); err != nil {
		h.t.Fatal(err)
	}
	return &out, page.Facts
}

// ends maps each visit to how it ended: "ok" or its failure kind.
func ends(facts []*record.Fact) map[string]string {
	out := map[string]string{}
	for _, f := range facts {
		if f.Type != record.FactEnd {
			continue
		}
		switch {
		case f.Skipped:
			out[f.Visit] = "skipped"
		case f.Succeeded():
			out[f.Visit] = "ok"
		default:
			out[f.Visit] = string(f.Error.Kind)
		}
	}
	return out
}

func expectEnds(t *testing.T, facts []*record.Fact, want map[string]string) {
	t.Helper()
	got := ends(facts)
	for v, w := range want {
		if got[v] != w {
			t.Errorf("visit %s ended %q, want %q (all: %v)", v, got[v], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ended visits %v, want %v", got, want)
	}
}

func TestWorkflowSequenceChoiceAndCommand(t *testing.T) {
	h := newHarness(t, &scripted{})
	out, facts := h.run(`name: f
`+testAgents+`nodes:
  - {id: a, agent: worker, prompt: first}
  - {id: t, run: [echo, "${{ a.output }}"]}
  - id: pick
    choice:
      - when: t.output.passed
        do: [{id: yes, agent: worker, prompt: "after ${{ t.output.report }}"}]
      - else: [{id: no, agent: worker, prompt: no}]
`, nil)
	if !out.OK || out.Status != record.StatusSucceeded || out.Output != "ok pick/yes" {
		t.Fatalf("run ended %+v, want succeeded with output %q", out, "ok pick/yes")
	}
	expectEnds(t, facts, map[string]string{"a": "ok", "t": "ok", "pick": "ok", "pick/yes": "ok"})
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "t" {
			if m, _ := f.Output.(map[string]any); m["report"] != "echo ok a" {
				t.Errorf("the command got %v, want the first answer rendered in", f.Output)
			}
		}
		if f.Type == record.FactEnd && f.Visit == "a" && (f.Worker != "w1" || !strings.Contains(f.Transcript, "") || f.Usage.Tokens() != 10) {
			t.Errorf("a's end fact = %+v, want the worker and the usage", f)
		}
	}
	if facts[0].Type != record.FactRun || facts[len(facts)-1].Type != record.FactRun || facts[len(facts)-1].Status != record.StatusSucceeded {
		t.Errorf("the facts do not start and end with the run's: first %+v, last %+v", facts[0], facts[len(facts)-1])
	}
}

func TestWorkflowMapAndLoop(t *testing.T) {
	h := newHarness(t, &scripted{script: func(visit string, _ int) (string, error) {
		if strings.HasPrefix(visit, "fix#") {
			return strings.TrimPrefix(visit, "fix#")[:1], nil // the iteration number
		}
		return "ok " + visit, nil
	}})
	out, facts := h.run(`name: f
input: {items: [string]}
`+testAgents+`nodes:
  - id: each
    map: input.items
    max: 5
    concurrency: 2
    do: [{id: look, agent: worker, prompt: "${{ item }}"}]
  - id: fix
    loop: {until: 'step.output == "3"', max: 5}
    do: [{id: step, agent: worker, prompt: go}]
`, map[string]any{"items": []any{"x", "y", "z"}})
	if !out.OK {
		t.Fatalf("run failed: %+v", out.Failure)
	}
	expectEnds(t, facts, map[string]string{"each": "ok", "each[1]/look": "ok", "each[2]/look": "ok", "each[3]/look": "ok",
		"fix": "ok", "fix#1/step": "ok", "fix#2/step": "ok", "fix#3/step": "ok"})
	loop, _ := out.Output.(map[string]any)
	if loop["converged"] != true || loop["iterations"] != float64(3) {
		t.Errorf("the loop's output = %v, want converged after 3 iterations", out.Output)
	}
}

func TestWorkflowParallelFailFastCancelsTheSibling(t *testing.T) {
	h := newHarness(t, &scripted{script: func(visit string, _ int) (string, error) {
		switch visit {
		case "both/bad/x":
			return "", errors.New("the model said no")
		case "both/slow/y":
			return "", errHang
		}
		return "ok", nil
	}})
	out, facts := h.run(`name: f
`+testAgents+`nodes:
  - id: both
    fail_fast: true
    parallel:
      bad: [{id: x, agent: worker, prompt: x}]
      slow: [{id: y, agent: worker, prompt: y}, {id: z, agent: worker, prompt: z}]
`, nil)
	if out.OK || out.Failure.Root().Kind != schema.FailProvider || out.Failure.Root().Visit != "both/bad/x" {
		t.Fatalf("run ended %+v, want failed naming both/bad/x provider", out.Failure)
	}
	expectEnds(t, facts, map[string]string{"both": "child", "both/bad/x": "provider", "both/slow/y": "cancelled"})
}

func TestWorkflowRetriesBackOffOnTheWorkflowClock(t *testing.T) {
	h := newHarness(t, &scripted{script: func(visit string, attempt int) (string, error) {
		if attempt < 3 {
			return "", errors.New("overloaded")
		}
		return "third time", nil
	}})
	start := time.Now()
	out, facts := h.run(`name: f
`+testAgents+`nodes:
  - {id: a, agent: worker, prompt: go, retry: 2}
`, nil)
	if !out.OK || out.Output != "third time" {
		t.Fatalf("run ended %+v", out)
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "a" {
			// 1 s then 2 s of backoff, on the workflow's timers: skipped
			// in the test environment, yet on the run's clock.
			if f.Attempts != 3 || f.WallMS < 3000 {
				t.Errorf("a ended after %d attempts in %d ms of workflow time, want 3 attempts and at least 3000 ms", f.Attempts, f.WallMS)
			}
			if f.Usage.Tokens() != 30 {
				t.Errorf("a spent %d tokens, want every attempt's 30", f.Usage.Tokens())
			}
		}
	}
	if real := time.Since(start); real > 2*time.Second {
		t.Errorf("the backoff took %s of real time: it is not on the workflow's clock", real)
	}
}

func TestWorkflowTimeoutIsTheFlowsNotTemporals(t *testing.T) {
	h := newHarness(t, &scripted{script: func(visit string, _ int) (string, error) { return "", errHang }})
	out, facts := h.run(`name: f
`+testAgents+`nodes:
  - {id: a, agent: worker, prompt: go, timeout: 300ms, on_fail: continue}
  - {id: b, run: [echo, "${{ a.error.kind }}"]}
`, nil)
	if !out.OK {
		t.Fatalf("run failed: %+v", out.Failure)
	}
	expectEnds(t, facts, map[string]string{"a": "timeout", "b": "ok"})
	if h.driver.attempts["a"] != 1 {
		t.Errorf("the timed-out turn ran %d times: Temporal retried a flow timeout", h.driver.attempts["a"])
	}
	if m, _ := out.Output.(map[string]any); m["report"] != "echo timeout" {
		t.Errorf("the next node read %v, want the timeout kind", out.Output)
	}
}

func TestWorkflowCancellationStopsTheRun(t *testing.T) {
	h := newHarness(t, &scripted{script: func(visit string, _ int) (string, error) {
		if visit == "b" {
			return "", errHang
		}
		return "ok", nil
	}})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Second)
	out, facts := h.run(`name: f
`+testAgents+`nodes:
  - {id: a, agent: worker, prompt: go}
  - {id: b, agent: worker, prompt: go}
  - {id: c, agent: worker, prompt: go}
`, nil)
	if out.Status != record.StatusStopped {
		t.Fatalf("run ended %s (%+v), want stopped", out.Status, out.Failure)
	}
	expectEnds(t, facts, map[string]string{"a": "ok", "b": "stopped"})
	if last := facts[len(facts)-1]; last.Type != record.FactRun || last.Status != record.StatusStopped {
		t.Errorf("the last fact = %+v, want the run's stopped end", last)
	}
}

func TestWorkflowMemoryScopeStaysOnTheWorkerThatHoldsIt(t *testing.T) {
	h := newHarness(t, &scripted{})
	out, facts := h.run(`name: f
`+testAgents+`nodes:
  - id: rounds
    loop: {until: 'false', max: 3}
    do:
      - {id: code, agent: worker, memory: rounds, prompt: go}
  - {id: fresh, agent: worker, prompt: go, on_fail: continue}
`, nil)
	if out.OK || out.Failure.Root().Kind != schema.FailUnconverged {
		t.Fatalf("run ended %+v, want unconverged", out.Failure)
	}
	// The first turn of the scope goes to the shared queue (the test
	// environment's default), the later ones to the queue of the worker
	// that answered it.
	if len(h.queues) != 3 || h.queues[1] != "w1" || h.queues[2] != "w1" || h.queues[0] == "w1" {
		t.Errorf("the scope's turns went to %v, want the shared queue then w1, w1", h.queues)
	}
	if got := strings.Join(h.driver.sessions, " "); got != "rounds#1/code= rounds#2/code=s1 rounds#3/code=s1" {
		t.Errorf("the driver was given sessions %q, want a fresh one then the worker's own", got)
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "rounds#3/code" && f.Session != "w1|s1" {
			t.Errorf("the scope's session is journaled as %q, want it to name its worker: w1|s1", f.Session)
		}
	}
}

func TestWorkflowBudgetStopsATurnOnItsWorker(t *testing.T) {
	h := newHarness(t, &scripted{script: func(visit string, _ int) (string, error) {
		if visit == "big" {
			return "", errGreedy
		}
		return "ok", nil
	}})
	out, facts := h.run(`name: f
budget: {tokens: 100}
`+testAgents+`nodes:
  - {id: small, agent: worker, prompt: go}
  - {id: big, agent: worker, prompt: go}
`, nil)
	if out.OK || out.Failure.Root().Kind != schema.FailBudget {
		t.Fatalf("run ended %+v, want failed budget", out.Failure)
	}
	expectEnds(t, facts, map[string]string{"small": "ok", "big": "budget"})
}
