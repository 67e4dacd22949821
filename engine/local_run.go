// This file is the local host's part of the engine that has not moved to
// package engine/local yet: starting and resuming a run in this process
// into a run directory (docs/decisions.md, "A pure walker").

package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/gitwork"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/rundir"
)

// Execute runs plan to its end and returns how it ended. An error means
// the run could not start (bad input, refused, the run directory); a run that
// started and failed returns a Result with OK false. Cancelling ctx with
// cause ErrStopped ends running visits as `stopped`. When Execute returns,
// every process the run started has ended, daemons a step left included.
func Execute(ctx context.Context, plan *flows.Plan, opts Options) (*Result, error) {
	w, snap, err := begin(ctx, plan, &opts)
	if err != nil {
		return nil, err
	}
	return runLocal(ctx, plan, opts, w, snap.Input, nil)
}

// Begin does what Execute does before it walks: it checks the input,
// refuses a run that could not go through, creates the run directory
// (taking its lock) and writes the snapshot. It is for a caller that has
// the run walked elsewhere (package temporal) and records it here; the
// caller closes the Writer.
func Begin(ctx context.Context, plan *flows.Plan, opts Options) (*rundir.Writer, *rundir.Snapshot, error) {
	return begin(ctx, plan, &opts)
}

// Snapshot is the snapshot Execute would record for a run of plan, with
// opts.RunID as its run (which may be ""), the input checked and the
// settings resolved, without creating a run directory: for runs that
// something else starts later (a Temporal Schedule).
func Snapshot(plan *flows.Plan, opts Options) (*rundir.Snapshot, error) {
	input, err := opts.prepare(plan)
	if err != nil {
		return nil, err
	}
	return NewSnapshot(opts.RunID, plan, input, opts.snapshotSettings()), nil
}

func begin(ctx context.Context, plan *flows.Plan, opts *Options) (*rundir.Writer, *rundir.Snapshot, error) {
	input, err := opts.prepare(plan)
	if err != nil {
		return nil, nil, err
	}
	if opts.RunsDir == "" {
		opts.RunsDir = filepath.Join(opts.WorkDir, ".flow", "runs")
	}
	w, err := rundir.Create(opts.RunsDir, opts.RunID, opts.secrets(plan)...)
	if err != nil {
		return nil, nil, err
	}
	opts.RunID = w.ID()
	snap := NewSnapshot(opts.RunID, plan, input, opts.snapshotSettings())
	snap.Repos = startCommits(ctx, plan, opts.WorkDir)
	opts.repos = snap.Repos
	if err := w.WriteSnapshot(snap); err != nil {
		_ = w.Close()
		return nil, nil, err
	}
	return w, snap, nil
}

// secrets are the values the run directory must redact besides those of
// the environment variables named like secrets: the caller's and the
// values of the variables the agents take their keys from.
func (o *Options) secrets(plan *flows.Plan) []string {
	out := slices.Clone(o.Secrets)
	for _, a := range plan.Agents {
		if a.APIKeyEnv != "" {
			out = append(out, os.Getenv(a.APIKeyEnv))
		}
	}
	return out
}

func (o *Options) snapshotSettings() rundir.Settings {
	s := rundir.Settings{Model: o.Settings.Model, Models: o.Settings.Models, Concurrency: o.Concurrency, WorkDir: o.WorkDir, Config: o.Config}
	if o.Settings.Timeout > 0 {
		s.Timeout = o.Settings.Timeout.String()
	}
	if o.Settings.TurnTimeout > 0 {
		s.TurnTimeout = o.Settings.TurnTimeout.String()
	}
	return s
}

// runLocal walks the plan with w open, closes w, and ends every process
// the run left. earlier holds the facts of earlier attempts when the run
// resumes; notes are said as it starts.
func runLocal(ctx context.Context, plan *flows.Plan, opts Options, w *rundir.Writer, input any, earlier []*Fact, notes ...string) (res *Result, err error) {
	defer func() {
		// A run ends every process it started, daemons a step left included.
		endLeftovers(opts.RunID)
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing run directory: %w", cerr)
		}
	}()
	del, closeDelegates := opts.delegator(w.Dir())
	defer closeDelegates()
	return walk(ctx, plan, opts, NewHost(Parts{Runtime: opts.Runtime, Leaves: opts.Leaves, Recorder: w, Redactor: w.Secrets(), Workspace: localWorkspace{w}, Delegator: del}), input, earlier, notes...)
}

// Resume continues the run in dir from its first unended visit (docs/resume-and-budgets.md):
// it runs the run's snapshot (the flows and agents as they were read, the
// same input and model), and every visit that ended keeps its recorded
// outcome and is not run again. Processes the dead engine left are ended
// first. load says where agents come from and which drivers exist; opts
// gives the drivers, the live view and a new --timeout (Settings.Timeout)
// if any; its RunID, RunsDir, Input and Settings.Model and Models are the
// run's own.
func Resume(ctx context.Context, dir string, load flows.Options, opts Options) (*Result, error) {
	info, err := rundir.Inspect(dir)
	if err != nil {
		return nil, err
	}
	if !info.Resumable {
		return nil, &RefusedError{Msg: fmt.Sprintf("run %s cannot be resumed: %s", info.ID, info.Why)}
	}
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil {
		return nil, err
	}
	plan, diags := flows.Reload(snap.File, snap.Sources(), snap.Agents, snap.Settings.WorkDir, load)
	if diags.HasErrors() {
		return nil, &RefusedError{Msg: fmt.Sprintf("the snapshot of run %s does not load any more:\n%s", info.ID, diags.Error())}
	}
	timeout, turnTimeout := snap.Settings.Durations()
	if opts.Settings.Timeout == 0 {
		opts.Settings.Timeout = timeout
	}
	opts.Settings.Model, opts.Settings.Models, opts.Settings.TurnTimeout = snap.Settings.Model, snap.Settings.Models, turnTimeout
	opts.Input, opts.WorkDir, opts.Config = snap.Input, snap.Settings.WorkDir, snap.Settings.Config
	opts.RunID, opts.RunsDir, opts.repos = info.ID, filepath.Dir(dir), snap.Repos
	if opts.Concurrency <= 0 {
		opts.Concurrency = snap.Settings.Concurrency
	}
	input, err := opts.prepare(plan)
	if err != nil {
		return nil, err
	}
	w, earlier, err := rundir.Reopen(dir, opts.secrets(plan)...)
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("resuming run %s (%s, %s)", info.ID, info.Flow, info.Status)}
	for _, f := range snap.Changed() {
		notes = append(notes, f+" changed since the run started; resuming the run's snapshot of it")
	}
	if n := endLeftovers(info.ID); n > 0 {
		notes = append(notes, fmt.Sprintf("ended %d process(es) left by the interrupted run", n))
	}
	return runLocal(ctx, plan, opts, w, input, earlier, notes...)
}

// endLeftovers ends every process still carrying the run's tag: daemons a
// step left, or what a dead engine's visits were running.
// It returns how many it found.
func endLeftovers(runID string) int {
	n, _ := proc.KillTagged(runID, proc.DefaultGrace)
	return n
}

// startCommits records, before the run starts, the commit checked out in
// each repository the plan isolates scopes in whose directory is known now:
// its scopes are made from it, whatever the user commits while the run
// goes on. A repository that cannot be read now is left out; its first
// scope fails then, saying why.
func startCommits(ctx context.Context, plan *flows.Plan, workDir string) map[string]string {
	return gitwork.Heads(ctx, plan.IsolatedRepos(workDir))
}

// defaultWorkDir makes the working directory the process's current one
// when opts name none.
func (o *Options) defaultWorkDir() error {
	if o.WorkDir != "" {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("finding the working directory: %w", err)
	}
	o.WorkDir = wd
	return nil
}

// localWorkspace is the run directory's workspace, with the content
// identity of a directory read through git in this process.
type localWorkspace struct{ *rundir.Writer }

// Tree is the git tree of dir's content (gitwork.ContentTree).
func (localWorkspace) Tree(ctx context.Context, dir string) string {
	return gitwork.ContentTree(ctx, dir)
}

// LocalWorkspace is the workspace of a run recorded in w, on this machine.
func LocalWorkspace(w *rundir.Writer) Workspace { return localWorkspace{w} }
