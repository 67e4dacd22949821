package temporal

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
)

// update records the histories of this release into
// testdata/histories/v<walkVersion> on a dev server:
//
//	go test ./temporal -run TestReplay -update
var update = flag.Bool("update", false, "record this release's workflow histories under testdata/histories (needs the Temporal CLI)")

// recordedFlows are the flows whose histories every release records: a
// sequence with a command and a choice, a map and a loop, a retry's
// backoff timer, a fail_fast cancellation, and a memory scope's later
// turns on the worker that holds its session; and askFlow, attended.
var recordedFlows = []struct{ name, src string }{
	{"sequence", `name: f
` + testAgents + `nodes:
  - {id: a, agent: worker, prompt: first}
  - {id: t, run: [echo, "${{ a.output }}"]}
  - id: pick
    choice:
      - when: t.output.passed
        do: [{id: yes, agent: worker, prompt: "after ${{ t.output.report }}"}]
      - else: [{id: no, agent: worker, prompt: no}]
`},
	{"map-loop", `name: f
` + testAgents + `nodes:
  - id: each
    map: '["x", "y", "z"]'
    max: 5
    concurrency: 2
    do: [{id: look, agent: worker, prompt: "${{ item }}"}, {id: tally, run: [wc, "${{ item }}"]}]
  - id: fix
    loop: {until: 'step.output == "3"', max: 5}
    do: [{id: step, agent: worker, prompt: go}]
`},
	{"retry", `name: f
` + testAgents + `nodes:
  - {id: flaky, agent: worker, prompt: go, retry: 2}
  - {id: after, run: [echo, done]}
`},
	{"fail-fast", `name: f
` + testAgents + `nodes:
  - id: both
    fail_fast: true
    parallel:
      bad: [{id: x, agent: worker, prompt: x}]
      slow: [{id: hang, agent: worker, prompt: y}, {id: z, agent: worker, prompt: z}]
    on_fail: continue
  - {id: last, run: [echo, last]}
`},
	{"memory", `name: f
` + testAgents + `nodes:
  - id: rounds
    loop: {until: 'false', max: 3}
    do: [{id: code, agent: worker, memory: rounds, prompt: go}]
    on_fail: continue
`},
}

// askFlow is recorded attended: its first ask is answered by a signal,
// its second takes its default when its timer fires.
const askFlow = `name: f
nodes:
  - {id: gate, ask: Go?, options: [go, stop], default: stop, timeout: 1m}
  - {id: later, ask: Later?, default: fine, timeout: 1s}
  - {id: after, run: [echo, "${{ gate.output }} ${{ later.output }}"]}
`

// recordAsk runs askFlow attended, answers its first ask as a mirror's
// relay does, and returns the run's id.
func recordAsk(t *testing.T, cl *cluster) string {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte(askFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	id := rundir.NewRunID(time.Now())
	snap := local.NewSnapshot(id, plan, nil, rundir.Settings{WorkDir: dir, Concurrency: 8, TurnTimeout: "1m"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := cl.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: cl.queue}, WorkflowName,
		&RunInput{Snapshot: snap, Attended: true})
	if err != nil {
		t.Fatal(err)
	}
	for {
		v, err := cl.c.QueryWorkflow(ctx, id, "", QueryAsks)
		var pending []*engine.Question
		if err == nil && v.Get(&pending) == nil && len(pending) == 1 && pending[0].Visit == "gate" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the ask never became pending")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cl.c.SignalWorkflow(ctx, id, "", SignalAnswer, AnswerSignal{Visit: "gate", Value: "go", By: "tester"}); err != nil {
		t.Fatal(err)
	}
	var out RunOutput
	if err := run.Get(ctx, &out); err != nil || !out.OK {
		t.Fatalf("the attended run: %+v, %v", out, err)
	}
	after, _ := out.Values["after"].(map[string]any)
	if r, _ := after["output"].(map[string]any); r == nil || r["report"] != "echo go fine" {
		t.Fatalf("the asks' answers did not reach the next node: %v", out.Values)
	}
	return id
}

// replayDriver answers by visit: "flaky" fails its first attempt, "x"
// fails, "hang" waits for its end, "fix#N/step" answers N; every turn
// keeps a session.
type replayDriver struct {
	mu       sync.Mutex
	attempts map[string]int
}

func (d *replayDriver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	d.mu.Lock()
	if d.attempts == nil {
		d.attempts = map[string]int{}
	}
	d.attempts[t.Visit]++
	n := d.attempts[t.Visit]
	d.mu.Unlock()
	in := int64(10)
	switch {
	case t.Visit == "flaky" && n == 1, strings.HasSuffix(t.Visit, "/x"):
		return &engine.TurnResult{Status: engine.Failed, Diagnostics: []string{"overloaded"}, Usage: record.Usage{Input: &in}}, nil
	case strings.HasSuffix(t.Visit, "/hang"):
		<-ctx.Done()
		return &engine.TurnResult{Status: engine.Aborted, Usage: record.Usage{Input: &in}}, context.Cause(ctx)
	}
	answer := "ok " + t.Visit
	if strings.HasPrefix(t.Visit, "fix#") {
		answer = strings.TrimPrefix(t.Visit, "fix#")[:1]
	}
	session := t.Session
	if session == "" {
		session = fmt.Sprintf("s-%s", t.Visit)
	}
	return &engine.TurnResult{Status: engine.Completed, Output: answer, Usage: record.Usage{Input: &in}, Session: session}, nil
}

// recordHistories runs each recorded flow on a dev server and writes its history.
func recordHistories(t *testing.T) {
	d := &replayDriver{}
	cl := newCluster(t, d, d)
	dir := filepath.Join("testdata", "histories", fmt.Sprintf("v%d", walkVersion))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	flows := append(recordedFlows, struct{ name, src string }{"asks", ""})
	for _, f := range flows {
		var id string
		if f.name == "asks" {
			id = recordAsk(t, cl)
		} else {
			_, _, id = cl.run(f.src, Timing{Heartbeat: 2 * time.Second, SessionWait: 5 * time.Second})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		iter := cl.c.GetWorkflowHistory(ctx, id, "", false, 0)
		h := &history{}
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			h.Events = append(h.Events, e)
		}
		cancel()
		b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplayCommittedHistories replays the histories that earlier
// releases and this one recorded (testdata/histories/v*/) against the
// current workflow code: a change that would break a run in flight (the
// walk's commands in another order, another activity, a timer more or
// less) without a workflow.GetVersion patch fails here (docs/temporal.md,
// Upgrades).
func TestReplayCommittedHistories(t *testing.T) {
	if *update {
		recordHistories(t)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "histories", "v*", "*.json"))
	if len(files) == 0 {
		t.Fatal("no committed histories under testdata/histories")
	}
	current := 0
	for _, file := range files {
		if filepath.Base(filepath.Dir(file)) == fmt.Sprintf("v%d", walkVersion) {
			current++
		}
		t.Run(strings.TrimSuffix(strings.TrimPrefix(file, "testdata/histories/"), ".json"), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
			if err := r.ReplayWorkflowHistory(quiet{}, h); err != nil {
				var what string
				if errors.Is(err, context.DeadlineExceeded) {
					what = " (timed out)"
				}
				t.Errorf("the history recorded in %s does not replay on this code%s: %v", file, what, err)
			}
		})
	}
	if current < len(recordedFlows)+1 { // and the asks
		t.Errorf("testdata/histories/v%d holds %d histories, want one per recorded flow (%d): record them with -update", walkVersion, current, len(recordedFlows))
	}
}
