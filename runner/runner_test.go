package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/run"
)

// load writes a flow file and loads it.
func load(t *testing.T, src string) (*flows.Plan, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return plan, dir
}

// hostIn is the wiring of a run working in dir, its run directory under
// dir/runs.
func hostIn(dir string) Host {
	return Host{Commands: run.New(), WorkDir: dir, RunsDir: filepath.Join(dir, "runs")}
}

// A run starts, is recorded, and a succeeded run is not resumed: the same
// lifecycle whoever calls it.
func TestLocalStartThenResume(t *testing.T) {
	plan, dir := load(t, "name: f\ninput: {who: {type: string, default: world}}\nnodes:\n  - {id: hi, run: [echo, \"${{ input.who }}\"]}\n")
	var b Backend = Local{}
	res, err := b.Start(context.Background(), plan, hostIn(dir), engine.Options{})
	if err != nil || !res.OK {
		t.Fatalf("start: %+v, %v", res, err)
	}
	if _, err := rundir.ReadSnapshot(res.Dir); err != nil {
		t.Fatalf("the run directory has no snapshot: %v", err)
	}
	_, err = b.Resume(context.Background(), res.Dir, hostIn(dir), engine.Options{})
	var re *engine.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("resuming a succeeded run: %v, want a refusal", err)
	}
}

// Bad input is refused before a run directory exists, by Start and by
// CheckInput alike.
func TestBadInputIsRefusedOnce(t *testing.T) {
	plan, dir := load(t, "name: f\ninput: {n: integer}\nnodes:\n  - {id: hi, run: [echo, hi]}\n")
	var ie *engine.InputError
	if _, err := CheckInput(plan, map[string]any{"n": "x"}); !errors.As(err, &ie) {
		t.Errorf("CheckInput: %v, want an *engine.InputError", err)
	}
	cfg, opts := hostIn(dir), engine.Options{}
	opts.Input = map[string]any{"nn": 1}
	if _, err := (Local{}).Start(context.Background(), plan, cfg, opts); !errors.As(err, &ie) {
		t.Errorf("Start: %v, want an *engine.InputError", err)
	}
	if _, err := os.Stat(cfg.RunsDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run made %s", cfg.RunsDir)
	}
}

// Stop ends a local run stopped, however asked (it cannot go on without
// this process), and the run resumes.
func TestLocalStopStopsTheRun(t *testing.T) {
	plan, dir := load(t, "name: f\nnodes:\n  - {id: nap, run: [sleep, '30']}\n  - {id: after, run: [echo, done]}\n")
	b := Local{}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	started := make(chan struct{}, 1)
	cfg, opts := hostIn(dir), engine.Options{}
	opts.OnEvent = func(e *record.Event) {
		if e.Type == record.EventVisitStart && e.Node == "nap" {
			select {
			case started <- struct{}{}:
			default:
			}
		}
	}
	go func() {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
		}
		b.Stop(cancel, LetGo)
	}()
	res, err := b.Start(ctx, plan, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status() != record.StatusStopped {
		t.Fatalf("status %s, want stopped", res.Status())
	}
	info, err := rundir.Inspect(res.Dir)
	if err != nil || !info.Resumable {
		t.Fatalf("a stopped run must be resumable: %+v, %v", info, err)
	}
}

// A local backend has nothing elsewhere to attach to.
func TestLocalAttachIsNotAttachable(t *testing.T) {
	_, err := (Local{}).Attach(context.Background(), t.TempDir(), "r1", engine.Options{})
	if !errors.Is(err, ErrNotAttachable) {
		t.Fatalf("%v, want ErrNotAttachable", err)
	}
	if (Local{}).Schedules(t.TempDir()) != nil {
		t.Error("a local backend keeps no schedules: its process fires them")
	}
}
