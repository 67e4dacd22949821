package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
)

// Activities run the leaves of runs on a worker: each turn and command
// through the worker's own LeafRunner (local.Leaves of the drivers
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
	// Secrets are the secrets this worker knows of (its configuration's);
	// a leaf redacts them, the values of the environment variables named
	// like secrets and those of the run's agents' key variables from what
	// it writes here and from everything it returns. Workers are never
	// handed the run machine's secrets: they redact their own.
	Secrets *secret.Redactor
	// Concurrency is the most visits of the shared task queue this worker
	// runs at once (NewWorker reads it); 0 leaves it to Temporal's default
	// (1000). The later turns of memory scopes the worker holds come on
	// top: they can run nowhere else.
	Concurrency int
	// Client carries a delegating turn's calls to its run's workflow
	// (NewWorker sets it); DelegateServer is the argv of the stdio MCP
	// server CLI drivers start for the delegate tool, default this
	// program's mcp-delegate.
	Client         client.Client
	DelegateServer []string
	deleg          delegateServer
}

// Turn runs one agent turn.
func (a *Activities) Turn(ctx context.Context, in *TurnInput) (*TurnOutput, error) {
	out := &TurnOutput{Worker: a.Queue}
	workDir, leave, err := a.leafDir(ctx, in.Scope, in.WorkDir, in.RunID, in.Visit)
	if err != nil {
		out.Ended = ended(err)
		return out, nil
	}
	secrets := a.secrets(in.KeyEnvs)
	out.Sent = sentBefore(ctx)
	home := rundir.Home(filepath.Join(a.RunsDir, in.RunID), in.Home)
	hb := startHeartbeat(ctx, Progress{Visit: in.Visit, Driver: in.Agent.Driver, Model: in.Model, Worker: a.Queue, Home: home}, secrets, out.Sent)
	defer hb.stop()
	agent := in.Agent
	if agent != nil && agent.Source != "" {
		c := *agent
		c.Source = a.local(in.WorkDir, agent.Source)
		agent = &c
	}
	t := &engine.Turn{RunID: in.RunID, Visit: in.Visit, Agent: agent, Model: in.Model, Prompt: in.Prompt, OutputSchema: in.OutputSchema,
		Home: home, WorkDir: workDir, Timeout: in.Timeout, Session: in.Session,
		TokensLeft: in.TokensLeft, Progress: hb.progress, Secrets: secrets}
	if in.Delegate != nil {
		del, closeDelegation, err := a.serveDelegation(ctx, in)
		if err != nil {
			out.Ended = ended(fmt.Errorf("%w: opening the turn's delegation on worker %s: %v", engine.ErrUnavailable, a.Queue, err))
			return out, nil
		}
		defer closeDelegation()
		t.Delegate = del
	}
	start := time.Now()
	res, err := a.Leaves.Turn(ctx, t)
	// What the agent's CLI wrote into the home itself, as a local run's
	// engine redacts it when the visit ends.
	redacted := rundir.RedactTree(t.Home, start, secrets)
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: Temporal records it so
	}
	if lerr := leave(ctx); lerr != nil {
		return nil, lerr // what the turn changed did not reach the remote: run it again
	}
	if err == nil && redacted != nil {
		err = fmt.Errorf("redacting the home of %s: %w", in.Visit, redacted)
	}
	if res != nil {
		if res.File != "" { // too long to travel: the reader gets its prefix and where the rest is
			res.File = a.Host + ":" + res.File
		}
		res.Stderr = tail(res.Stderr, stderrKept)
	}
	out.Result, out.Ended = secret.Value(secrets, res), redactEnded(secrets, ended(err))
	return out, nil
}

// sentBefore are the attempts of this activity before this one: each was
// sent to its worker, which died or stopped before it ended. The last
// heartbeat left tells the latest of them (its worker, its tokens) and
// those it knew of; an attempt that left no heartbeat is sent with its
// spend unknown.
func sentBefore(ctx context.Context) []record.Sent {
	attempt := int(activity.GetInfo(ctx).Attempt)
	if attempt <= 1 {
		return nil
	}
	var last Progress
	var known []record.Sent
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &last, &known) == nil && last.Attempt > 0 {
		s := record.Sent{Attempt: int(last.Attempt), Worker: last.Worker}
		if last.Tokens > 0 {
			s.Tokens = &last.Tokens
		}
		known = append(known, s)
	}
	out := make([]record.Sent, 0, attempt-1)
	for n := 1; n < attempt; n++ {
		s := record.Sent{Attempt: n}
		for _, k := range known {
			if k.Attempt == n {
				s = k
			}
		}
		out = append(out, s)
	}
	return out
}

// secrets are what a leaf redacts here (Activities.Secrets).
func (a *Activities) secrets(keyEnvs []string) *secret.Redactor {
	values := secret.FromEnviron(os.Environ())
	for _, name := range keyEnvs {
		values = append(values, os.Getenv(name))
	}
	return a.Secrets.With(values...)
}

func redactEnded(secrets *secret.Redactor, e *Ended) *Ended {
	if e != nil {
		e.Message = secrets.String(e.Message)
	}
	return e
}

// Command runs one `run:` node's command.
func (a *Activities) Command(ctx context.Context, in *CommandInput) (*CommandOutput, error) {
	out := &CommandOutput{Worker: a.Queue}
	dir, leave, err := a.leafDir(ctx, in.Scope, in.Dir, in.RunID, in.Visit)
	if err != nil {
		out.Ended = ended(err)
		return out, nil
	}
	// A command runs at most once, as in a local run, where a command
	// whose process died is run again only by flow resume: an attempt
	// after one that began it (its heartbeat says so) ends the visit.
	var before Progress
	if activity.GetInfo(ctx).Attempt > 1 && activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &before) == nil {
		out.Ended = ended(fmt.Errorf("%w: worker %s began the command and died (or stopped) before it ended; "+
			"a command never runs twice by itself: flow resume runs it again", engine.ErrUnavailable, before.Worker))
		return out, nil
	}
	secrets := a.secrets(in.KeyEnvs)
	home := rundir.Home(filepath.Join(a.RunsDir, in.RunID), in.Home)
	hb := startHeartbeat(ctx, Progress{Visit: in.Visit, Driver: "run", Worker: a.Queue, Home: home}, secrets, nil)
	defer hb.stop()
	c := &engine.Command{RunID: in.RunID, Visit: in.Visit, Argv: in.Argv, Script: in.Script, Dir: dir,
		Home: home, Env: in.Env, Timeout: in.Timeout, Progress: hb.progress, Sandbox: in.Sandbox}
	start := time.Now()
	res, err := a.Leaves.Command(ctx, c)
	redacted := rundir.RedactTree(c.Home, start, secrets)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if lerr := leave(ctx); lerr != nil {
		return nil, lerr
	}
	if err == nil && redacted != nil {
		err = fmt.Errorf("redacting the home of %s: %w", in.Visit, redacted)
	}
	out.Result, out.Ended = secret.Value(secrets, res), redactEnded(secrets, ended(err))
	return out, nil
}

// workDir is where a leaf works here: the run's working directory
// mapped through the worker's --workdir, else the run's own, which must
// exist on this machine.
func (a *Activities) workDir(run string) (string, error) {
	if a.WorkDir != "" {
		return a.local(run, run), nil
	}
	if st, err := os.Stat(run); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: the run works in %s, which is not a directory on worker %s; start the worker with --workdir set to its checkout",
			engine.ErrUnavailable, run, a.Queue)
	}
	return run, nil
}

// local is path p of the run's machine on this one: under the run's
// working directory root, the same place under the worker's --workdir
// (its checkout of that directory); anything else, or everything without
// --workdir, as it is. A relative p is relative to root. Exec agents'
// files, their relative commands and run: nodes' directories all resolve
// through it, so they mean on a worker what they mean in the run.
func (a *Activities) local(root, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	if a.WorkDir == "" || root == "" {
		return p
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.Join(a.WorkDir, rel)
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
	ctx     context.Context
	secrets *secret.Redactor
	sent    []record.Sent // the attempts before this one, in every beat
	mu      sync.Mutex
	last    Progress
	done    chan struct{}
	ticker  conc.WaitGroup
}

func startHeartbeat(ctx context.Context, p Progress, secrets *secret.Redactor, sent []record.Sent) *heartbeat {
	p.Attempt = activity.GetInfo(ctx).Attempt
	h := &heartbeat{ctx: ctx, secrets: secrets, sent: sent, last: p, done: make(chan struct{})}
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
	h.last.Activity = h.secrets.String(p.Activity)
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
	activity.RecordHeartbeat(h.ctx, p, h.sent)
}

func (h *heartbeat) stop() {
	close(h.done)
	h.ticker.Wait()
}
