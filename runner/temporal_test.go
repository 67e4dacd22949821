package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	tclient "go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/run"
	"github.com/flowrun/flow/temporal"
)

type quietLog struct{}

func (quietLog) Debug(string, ...any) {}
func (quietLog) Info(string, ...any)  {}
func (quietLog) Warn(string, ...any)  {}
func (quietLog) Error(string, ...any) {}

// The Temporal backend's lifecycle on a real dev server and worker: a run
// starts and is mirrored; a run let go goes on there (ErrDetached) and
// Resume re-attaches to it until it ends; Stop(StopRun) cancels one, which
// ends stopped.
func TestTemporalLifecycle(t *testing.T) {
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
	w := temporal.NewWorker(c, "runner-test", &temporal.Activities{Leaves: local.Leaves{Commands: run.New()}, RunsDir: t.TempDir()})
	workerCtx, stopWorker := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	defer wg.Wait()
	defer stopWorker()
	wg.Go(func() { _ = w.Run(workerCtx) })
	var b Backend = OnTemporal(c, TemporalConfig{Address: srv.Address, Namespace: "default", TaskQueue: "runner-test",
		Heartbeat: 3 * time.Second}) // heartbeats every second: a cancelled visit hears of it soon

	plan, dir := load(t, "name: f\nnodes:\n  - {id: hi, run: [echo, hi]}\n")
	res, err := b.Start(context.Background(), plan, hostIn(dir), engine.Options{})
	if err != nil || !res.OK {
		t.Fatalf("start: %+v, %v", res, err)
	}
	if snap, err := rundir.ReadSnapshot(res.Dir); err != nil || snap.Temporal == nil {
		t.Fatalf("the run directory is not the mirror of a Temporal run: %+v, %v", snap, err)
	}

	// Let go once the nap started: the run goes on on Temporal.
	plan, dir = load(t, "name: f\nnodes:\n  - {id: nap, run: [sleep, '2']}\n  - {id: after, run: [echo, done]}\n")
	res, err = startThen(t, b, plan, hostIn(dir), engine.Options{}, LetGo)
	if !errors.Is(err, ErrDetached) {
		t.Fatalf("a run let go: %+v, %v, want ErrDetached", res, err)
	}
	runDir := onlyRun(t, dir)
	res, err = b.Resume(context.Background(), runDir, hostIn(dir), engine.Options{})
	if err != nil || !res.OK {
		t.Fatalf("re-attaching: %+v, %v", res, err)
	}

	t0 := time.Now()
	// Stop: the workflow is cancelled and the run ends stopped.
	plan, dir = load(t, "name: f\nnodes:\n  - {id: nap, run: [sleep, '30']}\n")
	res, err = startThen(t, b, plan, hostIn(dir), engine.Options{}, StopRun)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	t.Logf("stopped after %s", time.Since(t0))
	if res.Status() != record.StatusStopped {
		t.Fatalf("a stopped Temporal run: %s, %v", res.Status(), err)
	}
}

// startThen starts plan on b and stops it how once its first visit started.
func startThen(t *testing.T, b Backend, plan *flows.Plan, cfg Host, opts engine.Options, how Stopping) (*engine.Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	started := make(chan struct{})
	var once bool
	opts.OnEvent = func(e *record.Event) {
		if e.Type == record.EventVisitStart && !once {
			once = true
			close(started)
		}
	}
	var wg conc.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
		}
		b.Stop(cancel, how)
	})
	return b.Start(ctx, plan, cfg, opts)
}

// onlyRun is the one run directory under dir's runs.
func onlyRun(t *testing.T, dir string) string {
	t.Helper()
	runs, err := rundir.List(hostIn(dir).RunsDir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	return runs[0].Dir
}
