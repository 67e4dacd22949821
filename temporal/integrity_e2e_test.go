package temporal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
)

// dialKeyed is a client of the dev server at addr with k's converters, as
// flow's commands dial.
func dialKeyed(t *testing.T, addr string, k Key) client.Client {
	t.Helper()
	var c client.Client
	var err error
	for range 50 { // the frontend listens a moment before it serves
		if c, err = client.Dial(client.Options{HostPort: addr, Logger: quiet{}, DataConverter: DataConverter(k), FailureConverter: FailureConverter(k)}); err == nil {
			t.Cleanup(c.Close)
			return c
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("dialing the dev server: %v", err)
	return nil
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, start func() error, stop func()) {
	t.Helper()
	if err := start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// startFlow starts src as a run workflow on queue and returns its id.
func startFlow(t *testing.T, c client.Client, queue, src string, attended bool) (string, client.WorkflowRun) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	id := rundir.NewRunID(time.Now())
	snap := local.NewSnapshot(id, plan, nil, rundir.Settings{WorkDir: dir, Concurrency: 8, TurnTimeout: "1m"})
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, WorkflowName,
		&RunInput{Snapshot: snap, Attended: attended, Timing: Timing{Heartbeat: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return id, run
}

// historyOf is the events of workflow id so far.
func historyOf(t *testing.T, c client.Client, id string) []*historyEvent {
	t.Helper()
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historyEvent
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	return events
}

// within polls ok every 100 ms until it holds, or fails the test saying
// what after d.
func within(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A keyed run's ask is answered only by a signal sealed with the run's
// key for this run: a plaintext answer (anyone with access to the
// namespace can send one) and a sealed answer moved from another run are
// refused, the ask keeps waiting, and the mirror's reading of the history
// says so. On the code before, the plaintext answer was taken: the run
// went on with mallory's "deploy".
func TestE2EAPlaintextSignalToAKeyedRunIsRefused(t *testing.T) {
	srv := devserver.Start(t)
	k := testKey(t, "the run's key")
	c := dialKeyed(t, srv.Address, k)
	mallory := dialKeyed(t, srv.Address, Key{})
	queue := "keyed-asks"
	w := NewWorker(c, queue, &Activities{Leaves: local.Leaves{Commands: echoCommands{}}, RunsDir: t.TempDir()})
	ctx, stop := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	t.Cleanup(func() { stop(); wg.Wait() })

	id, run := startFlow(t, c, queue, `name: f
nodes:
  - {id: gate, ask: Deploy to production?, options: [deploy, hold], default: hold, timeout: 5m}
  - {id: after, run: [echo, "${{ gate.output }}"]}
`, true)
	pending := func() []string {
		v, err := c.QueryWorkflow(context.Background(), id, "", QueryAsks)
		var qs []*engine.Question
		if err != nil || v.Get(&qs) != nil {
			return nil
		}
		var out []string
		for _, q := range qs {
			out = append(out, q.Visit)
		}
		return out
	}
	within(t, 30*time.Second, "the ask waiting", func() bool { return len(pending()) == 1 })

	if err := mallory.SignalWorkflow(context.Background(), id, "", SignalAnswer, AnswerSignal{Visit: "gate", Value: "deploy", By: "mallory-no-key"}); err != nil {
		t.Fatal(err)
	}
	moved, err := in(k, "another-run").ToPayloads(AnswerSignal{Visit: "gate", Value: "deploy", By: "alice-in-another-run"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WorkflowService().SignalWorkflowExecution(context.Background(), &workflowservice.SignalWorkflowExecutionRequest{
		Namespace: "default", WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id}, SignalName: SignalAnswer, Input: moved, Identity: "mover",
	}); err != nil {
		t.Fatal(err)
	}
	// Both signals taken by a workflow task, the ask still waits.
	within(t, 30*time.Second, "a workflow task after the two signals", func() bool {
		signals, after := 0, false
		for _, e := range historyOf(t, c, id) {
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				signals++
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				after = signals == 2
			}
		}
		return after
	})
	if p := pending(); len(p) != 1 || p[0] != "gate" {
		t.Fatalf("after a plaintext and a moved answer the pending asks are %v, want gate still waiting", p)
	}
	if err := c.SignalWorkflow(context.Background(), id, "", SignalAnswer, AnswerSignal{Visit: "gate", Value: "hold", By: "alice"}); err != nil {
		t.Fatal(err)
	}
	var out RunOutput
	ctx2, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run.Get(ctx2, &out); err != nil || !out.OK {
		t.Fatalf("the run: %+v, %v", out, err)
	}
	after, _ := out.Values["after"].(map[string]any)
	if r, _ := after["output"].(map[string]any); r == nil || r["report"] != "echo hold" {
		t.Errorf("the run went on with %v, want alice's sealed answer (hold)", out.Values["after"])
	}
	// What the mirror says of the history: the two refused signals, named
	// by their senders, and nothing of alice's.
	dc := converterFor(k, id)
	var troubles []string
	for _, e := range historyOf(t, c, id) {
		if tr := troubleOf(e, dc); tr != "" {
			troubles = append(troubles, tr)
		}
	}
	joined := strings.Join(troubles, "\n")
	if len(troubles) != 2 || !strings.Contains(joined, "not sealed") || !strings.Contains(joined, "sealed for workflow another-run") ||
		!strings.Contains(joined, "from mover") {
		t.Errorf("the mirror says of the history:\n%s\nwant the plaintext and the moved signals refused", joined)
	}
}

func converterFor(k Key, id string) converter.DataConverter {
	return (&Client{Key: k, Namespace: "default"}).converter(id)
}

// A worker that cannot open a run's payloads (no key, or another) fails
// the run's tasks, never the run: its workflow tasks fail and are
// retried, its activities are scheduled again, and once a worker with the
// key takes them the run ends as it would have. On the code before, the
// first workflow task a keyless worker took failed the workflow.
func TestE2EAWorkerWithoutTheKeyFailsTasksNotRuns(t *testing.T) {
	srv := devserver.Start(t)
	k, other := testKey(t, "the run's key"), testKey(t, "another key")
	c := dialKeyed(t, srv.Address, k)
	queue := "keyed-tasks"
	acts := func() *Activities {
		return &Activities{Leaves: local.Leaves{Commands: echoCommands{}}, RunsDir: t.TempDir(), Queue: queue, Host: "h"}
	}
	workflows := func(c client.Client, name string) worker.Worker {
		w := worker.New(c, queue, worker.Options{Identity: name, LocalActivityWorkerOnly: true})
		w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
		return w
	}
	activities := func(c client.Client, name string) worker.Worker {
		w := worker.New(c, queue, worker.Options{Identity: name, DisableWorkflowWorker: true})
		register(w, acts())
		return w
	}
	// The workflow: only a worker without the key takes it at first.
	keyless := workflows(dialKeyed(t, srv.Address, Key{}), "keyless-worker")
	runWorker(t, keyless.Start, keyless.Stop)
	id, run := startFlow(t, c, queue, "name: f\nnodes:\n  - {id: t, run: [echo, hi]}\n", false)
	var failed string
	within(t, 30*time.Second, "the keyless worker failing a workflow task", func() bool {
		for _, e := range historyOf(t, c, id) {
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
				failed = troubleOf(e, converterFor(k, id))
				return true
			}
		}
		return false
	})
	if !strings.Contains(failed, "keyless-worker") || !strings.Contains(failed, k.ID()) || !strings.Contains(failed, unreadableMark) {
		t.Errorf("the mirror says of the failed task: %q, want the worker, the key it lacks and why", failed)
	}
	desc, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil || desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		t.Fatalf("the run after a keyless worker took it: %v, %v; want it running", desc.GetWorkflowExecutionInfo().GetStatus(), err)
	}
	keyless.Stop()
	// The workflow on a worker with the key, its activity on one with
	// another key only: the activity is scheduled again and again.
	keyed := workflows(c, "keyed-worker")
	runWorker(t, keyed.Start, keyed.Stop)
	wrong := activities(dialKeyed(t, srv.Address, other), "wrong-key-worker")
	runWorker(t, wrong.Start, wrong.Stop)
	var attempt string
	within(t, 60*time.Second, "an activity attempt the wrong-key worker could not open, then the activity scheduled again", func() bool {
		d, err := c.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false
		}
		for _, a := range d.GetPendingActivities() {
			if tr, _ := attemptTrouble(a); tr != "" {
				attempt = tr
			}
		}
		again := false
		for _, e := range historyOf(t, c, id) {
			if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				again = true
			}
		}
		return attempt != "" && again
	})
	if !strings.Contains(attempt, "wrong-key-worker") || !strings.Contains(attempt, k.ID()) {
		t.Errorf("the mirror says of the activity: %q, want the worker and the key it lacks", attempt)
	}
	wrong.Stop()
	right := activities(c, "right-key-worker")
	runWorker(t, right.Start, right.Stop)
	var out RunOutput
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &out); err != nil || !out.OK {
		t.Fatalf("the run once a worker with the key took it: %+v, %v", out, err)
	}
}

// A Temporal Schedule's action is sealed once, for the schedule's
// workflow id, and each fire runs as that id and the fire's time: a keyed
// worker opens it there, and the fired run ends well.
func TestE2EAKeyedSchedulesFiresRun(t *testing.T) {
	srv := devserver.Start(t)
	k := testKey(t, "the run's key")
	c := dialKeyed(t, srv.Address, k)
	queue := "keyed-schedule"
	w := NewWorker(c, queue, &Activities{Leaves: local.Leaves{Commands: echoCommands{}}, RunsDir: t.TempDir()})
	ctx, stop := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	t.Cleanup(func() { stop(); wg.Wait() })
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte("name: f\nnodes:\n  - {id: t, run: [echo, hi]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	snap := local.NewSnapshot("", plan, nil, rundir.Settings{WorkDir: dir, Concurrency: 8, TurnTimeout: "1m"})
	h, err := c.ScheduleClient().Create(context.Background(), client.ScheduleOptions{
		ID:   "flow-test-tick",
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Second}}},
		Action: &client.ScheduleWorkflowAction{ID: "flow-test-tick", Workflow: WorkflowName, TaskQueue: queue,
			Args: []any{&RunInput{Snapshot: snap}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	var fired string
	within(t, 30*time.Second, "a fire of the schedule", func() bool {
		d, err := h.Describe(context.Background())
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false
		}
		fired = d.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		return true
	})
	if !strings.HasPrefix(fired, "flow-test-tick-") {
		t.Fatalf("the fire's workflow id %q does not extend the action's", fired)
	}
	var out RunOutput
	ctx2, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.GetWorkflow(ctx2, fired, "").Get(ctx2, &out); err != nil || !out.OK {
		t.Fatalf("the fired run %s: %+v, %v", fired, out, err)
	}
}
