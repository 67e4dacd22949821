package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"go.temporal.io/sdk/activity"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/rundir"
)

// Activities run the leaves of runs on a worker: each turn and command
// through the worker's own LeafRunner (engine.LocalLeaves of the drivers
// this machine is configured with), in a run directory of the worker's
// (homes, transcripts, answers too long to travel). Workers share no
// storage: what a leaf leaves on a worker stays there, and its facts say
// where. Safe for concurrent use.
type Activities struct {
	// Leaves runs the leaves on this machine.
	Leaves engine.LeafRunner
	// RunsDir holds this worker's run directories (homes only: the journal
	// is the workflow's, mirrored by the client).
	RunsDir string
	// WorkDir, if set, is where leaves work on this machine; default the
	// run's working directory, which must then exist here.
	WorkDir string
	// Queue is this worker's own task queue, where a memory scope's later
	// turns find the session it holds.
	Queue string
	// Host names this machine in the location of an answer too long to
	// travel (host:path).
	Host string
	// Concurrency is the most visits of the shared task queue this worker
	// runs at once (NewWorker reads it); 0 leaves it to Temporal's default
	// (1000). The later turns of memory scopes the worker holds come on
	// top: they can run nowhere else.
	Concurrency int
}

// Turn runs one agent turn.
func (a *Activities) Turn(ctx context.Context, in *TurnInput) (*TurnOutput, error) {
	out := &TurnOutput{Worker: a.Queue}
	workDir, err := a.workDir(in.WorkDir)
	if err != nil {
		out.Ended = ended(err)
		return out, nil
	}
	home := rundir.Home(filepath.Join(a.RunsDir, in.RunID), in.Home)
	hb := startHeartbeat(ctx, Progress{Visit: in.Visit, Driver: in.Agent.Driver, Model: in.Model, Worker: a.Queue, Home: home})
	defer hb.stop()
	t := &engine.Turn{RunID: in.RunID, Visit: in.Visit, Agent: in.Agent, Model: in.Model, Prompt: in.Prompt, OutputSchema: in.OutputSchema,
		Home: home, WorkDir: workDir, Timeout: in.Timeout, Session: in.Session,
		TokensLeft: in.TokensLeft, Progress: hb.progress}
	res, err := a.Leaves.Turn(ctx, t)
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: Temporal records it so
	}
	if res != nil {
		if res.File != "" { // too long to travel: the reader gets its prefix and where the rest is
			res.File = a.Host + ":" + res.File
		}
		res.Stderr = tail(res.Stderr, stderrKept)
	}
	out.Result, out.Ended = res, ended(err)
	return out, nil
}

// Command runs one `run:` node's command.
func (a *Activities) Command(ctx context.Context, in *CommandInput) (*CommandOutput, error) {
	out := &CommandOutput{Worker: a.Queue}
	dir, err := a.workDir(in.Dir)
	if err != nil {
		out.Ended = ended(err)
		return out, nil
	}
	home := rundir.Home(filepath.Join(a.RunsDir, in.RunID), in.Home)
	hb := startHeartbeat(ctx, Progress{Visit: in.Visit, Driver: "run", Worker: a.Queue, Home: home})
	defer hb.stop()
	c := &engine.Command{RunID: in.RunID, Visit: in.Visit, Argv: in.Argv, Script: in.Script, Dir: dir,
		Home: home, Env: in.Env, Timeout: in.Timeout, Progress: hb.progress}
	res, err := a.Leaves.Command(ctx, c)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out.Result, out.Ended = res, ended(err)
	return out, nil
}

// workDir is where a leaf works here: the worker's --workdir, else the
// run's own directory, which must exist on this machine.
func (a *Activities) workDir(run string) (string, error) {
	if a.WorkDir != "" {
		return a.WorkDir, nil
	}
	if st, err := os.Stat(run); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: the run works in %s, which is not a directory on worker %s; start the worker with --workdir set to its checkout",
			engine.ErrUnavailable, run, a.Queue)
	}
	return run, nil
}

// stderrKept is how much of a turn's stderr travels back (the end of it);
// the whole of it stays in the transcript on the worker.
const stderrKept = 8 << 10

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// heartbeat records a visit's progress as the activity's heartbeat: on
// every change, and at least every third of the heartbeat timeout while
// the leaf is silent, so that Temporal knows the worker is alive and
// delivers a cancellation promptly.
type heartbeat struct {
	ctx    context.Context
	mu     sync.Mutex
	last   Progress
	done   chan struct{}
	ticker conc.WaitGroup
}

func startHeartbeat(ctx context.Context, p Progress) *heartbeat {
	h := &heartbeat{ctx: ctx, last: p, done: make(chan struct{})}
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	h.beat()
	h.ticker.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				h.beat()
			}
		}
	})
	return h
}

func (h *heartbeat) progress(p engine.Progress) {
	h.mu.Lock()
	h.last.Activity = p.Activity
	if p.Tokens > 0 {
		h.last.Tokens = p.Tokens
	}
	h.mu.Unlock()
	h.beat()
}

func (h *heartbeat) beat() {
	h.mu.Lock()
	p := h.last
	h.mu.Unlock()
	activity.RecordHeartbeat(h.ctx, p)
}

func (h *heartbeat) stop() {
	close(h.done)
	h.ticker.Wait()
}
