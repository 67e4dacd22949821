package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	tclient "go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/temporal"
)

type quietLog struct{}

func (quietLog) Debug(string, ...any) {}
func (quietLog) Info(string, ...any)  {}
func (quietLog) Warn(string, ...any)  {}
func (quietLog) Error(string, ...any) {}

func TestServeTemporalSchedulesFireOnTemporalAndAreMirrored(t *testing.T) {
	srv := devserver.Start(t)
	var c tclient.Client
	var err error
	for range 50 {
		if c, err = tclient.Dial(tclient.Options{HostPort: srv.Address, Logger: quietLog{}}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := runner.OnTemporal(c, runner.TemporalConfig{Address: srv.Address, Namespace: "default", TaskQueue: "serve-test"})
	cmds := &fakeCommands{}
	w := temporal.NewWorker(c, "serve-test", &temporal.Activities{Leaves: local.Leaves{Commands: cmds}, RunsDir: t.TempDir()})
	workerCtx, stopWorker := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	defer wg.Wait()
	defer stopWorker()
	wg.Go(func() { _ = w.Run(workerCtx) })

	dir := t.TempDir()
	flowDir := filepath.Join(dir, "flows")
	if err := os.MkdirAll(flowDir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(flowDir, "tick.yaml")
	if err := os.WriteFile(file, []byte("name: tick\nschedule: {cron: '@every 1s'}\nnodes:\n  - {id: hello, run: [echo, hi]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runsDir := filepath.Join(dir, "runs")
	s, err := New(Config{Dir: flowDir, WorkDir: dir, RunsDir: runsDir, Log: discard, Listener: ln, Poll: 200 * time.Millisecond,
		Host: runner.Host{Commands: cmds}, Backend: tc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, shutdown := context.WithCancel(context.Background())
	served := make(chan error, 1)
	wg.Go(func() { served <- s.Run(ctx) })
	defer func() {
		shutdown()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	// A fire on Temporal becomes a served run, mirrored here.
	deadline := time.Now().Add(20 * time.Second)
	var mirrored *rundir.RunInfo
	for mirrored == nil {
		runs, _ := rundir.List(runsDir)
		for _, r := range runs {
			if r.Status == record.StatusSucceeded {
				mirrored = r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled run was mirrored in %s (runs: %d)", runsDir, len(runs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	snap, err := rundir.ReadSnapshot(mirrored.Dir)
	if err != nil || snap.Temporal == nil || !strings.Contains(mirrored.ID, "tick") {
		t.Errorf("the mirrored run %s does not name its workflow: %+v, %v", mirrored.ID, snap, err)
	}
	if s.trigger(mirrored.ID) != TriggerSchedule {
		t.Errorf("the mirrored run's trigger is %q, want schedule", s.trigger(mirrored.ID))
	}
	// The fire counts, and is recorded at its due time (the schedule fires
	// on whole seconds), not when this server noticed it.
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !regexp.MustCompile(`flow_schedule_fires_total\{flow="tick",outcome="started"\} [1-9]`).Match(body) {
		t.Errorf("/metrics counts no started fire of tick:\n%s", body)
	}
	var fire *Record
	for _, r := range s.sched.recentFires("tick") {
		if r.Run == mirrored.ID {
			fire = &r
		}
	}
	if fire == nil || fire.At.IsZero() || fire.At.Nanosecond() != 0 || !strings.HasSuffix(mirrored.ID, fire.At.UTC().Format(time.RFC3339)) {
		t.Errorf("the fire of %s is recorded as %+v; want its due time, which its id ends with", mirrored.ID, fire)
	}
	id := s.schedules.(*temporal.Schedules).ID("tick")
	if _, err := c.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background()); err != nil {
		t.Fatalf("the flow's Temporal Schedule %s: %v", id, err)
	}

	// A flow file removed: its schedule goes.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := c.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background())
		if err != nil {
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the removed flow's Temporal Schedule is still there")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeTemporalScheduledAskIsAnsweredOverTheAPI: a scheduled flow's
// ask, in a run a Temporal Schedule started, waits for an answer (a
// Temporal signal): the API lists it as it lists a local run's, the
// answer given there reaches the workflow, and the run goes on with it.
func TestServeTemporalScheduledAskIsAnsweredOverTheAPI(t *testing.T) {
	srv := devserver.Start(t)
	var c tclient.Client
	var err error
	for range 50 {
		if c, err = tclient.Dial(tclient.Options{HostPort: srv.Address, Logger: quietLog{}}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := runner.OnTemporal(c, runner.TemporalConfig{Address: srv.Address, Namespace: "default", TaskQueue: "serve-ask"})
	cmds := &fakeCommands{}
	w := temporal.NewWorker(c, "serve-ask", &temporal.Activities{Leaves: local.Leaves{Commands: cmds}, RunsDir: t.TempDir()})
	workerCtx, stopWorker := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	defer wg.Wait()
	defer stopWorker()
	wg.Go(func() { _ = w.Run(workerCtx) })

	dir := t.TempDir()
	flowDir := filepath.Join(dir, "flows")
	if err := os.MkdirAll(flowDir, 0o755); err != nil {
		t.Fatal(err)
	}
	flow := "name: gate\nschedule: {cron: '@every 1s', overlap: skip}\nnodes:\n" +
		"  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold, timeout: 1m}\n" +
		"  - {id: after, run: [echo, \"${{ ship.output }}\"]}\n"
	if err := os.WriteFile(filepath.Join(flowDir, "gate.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Dir: flowDir, WorkDir: dir, RunsDir: filepath.Join(dir, "runs"), Log: discard, Listener: ln, Poll: 200 * time.Millisecond,
		Host: runner.Host{Commands: cmds}, Backend: tc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, shutdown := context.WithCancel(context.Background())
	served := make(chan error, 1)
	wg.Go(func() { served <- s.Run(ctx) })
	defer func() {
		shutdown()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	api := &client{t: t, base: "http://" + ln.Addr().String()}

	// The first fire's ask appears on the API.
	var ask map[string]any
	for deadline := time.Now().Add(30 * time.Second); ask == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no ask of a scheduled run appeared on the API")
		}
		_, m, _ := api.do("GET", "/api/asks", "")
		if asks, _ := m["asks"].([]any); len(asks) > 0 {
			ask = asks[0].(map[string]any)
		}
	}
	id := ask["run"].(string)
	if ask["question"] != "Ship it?" || ask["visit"] != "ship" || !strings.Contains(id, "gate") {
		t.Fatalf("the ask on the API: %v", ask)
	}
	if code, m, _ := api.do("POST", "/api/runs/"+id+"/asks/ship", `{"answer": "ship"}`); code != 200 {
		t.Fatalf("answering: %d %v", code, m)
	}
	m := api.waitRun(id, "succeeded")
	vs := m["visits"].([]any)
	answer, _ := vs[0].(map[string]any)["answer"].(map[string]any)
	if answer == nil || answer["by"] != anonymous || answer["default"] == true ||
		vs[1].(map[string]any)["output"].(map[string]any)["report"] != "echo ship" {
		t.Fatalf("the answer did not reach the run and its next node: %v", vs)
	}
	if s.trigger(id) != TriggerSchedule {
		t.Errorf("the run's trigger is %q, want schedule", s.trigger(id))
	}
}
