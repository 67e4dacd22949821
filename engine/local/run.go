package local

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/gitwork"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/rundir"
)

// Execute runs plan to its end in this process, into a new run directory,
// and returns how it ended: cfg is where it happens (Config says what
// each field does), opts how the walker walks it (engine.Options).
// An error means the run could not start (bad input, refused, the run
// directory); a run that started and failed returns a Result with OK
// false. Cancelling ctx with cause engine.ErrStopped ends running visits
// as `stopped`. When Execute returns, every process the run started has
// ended, daemons a step left included.
func Execute(ctx context.Context, plan *flows.Plan, cfg Config, opts engine.Options) (*engine.Result, error) {
	w, _, err := begin(ctx, plan, &cfg, &opts)
	if err != nil {
		return nil, err
	}
	return run(ctx, plan, cfg, opts, w, nil)
}

// Begin does what Execute does before it walks: it checks the input,
// refuses a run that could not go through, creates the run directory
// (taking its lock) and writes the snapshot. It is for a caller that has
// the run walked elsewhere (package temporal) and records it here; the
// caller closes the Writer.
func Begin(ctx context.Context, plan *flows.Plan, cfg Config, opts engine.Options) (*rundir.Writer, *rundir.Snapshot, error) {
	return begin(ctx, plan, &cfg, &opts)
}

// Snapshot is the snapshot Execute would record for a run of plan, with
// opts.RunID as its run (which may be ""), the input checked and the
// settings resolved, without creating a run directory: for runs that
// something else starts later (a Temporal Schedule).
func Snapshot(plan *flows.Plan, cfg Config, opts engine.Options) (*rundir.Snapshot, error) {
	input, err := prepare(plan, &cfg, &opts)
	if err != nil {
		return nil, err
	}
	return NewSnapshot(opts.RunID, plan, input, settings(&cfg, &opts)), nil
}

// prepare fills in the local host's defaults (the working directory, the
// leaves of cfg.Drivers and cfg.Commands, this process's runtime) and
// checks the input and the options (engine.Options.Prepare), then what
// this host must have for plan (checkHost).
func prepare(plan *flows.Plan, cfg *Config, opts *engine.Options) (any, error) {
	if cfg.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding the working directory: %w", err)
		}
		cfg.WorkDir = wd
	}
	input, err := opts.Prepare(plan)
	if err != nil {
		return nil, err
	}
	if err := checkHost(plan, cfg); err != nil {
		return nil, err
	}
	if cfg.Leaves == nil {
		cfg.Leaves = Leaves{Drivers: cfg.Drivers, Commands: cfg.Commands}
	}
	if cfg.Runtime == nil {
		cfg.Runtime = Runtime{}
	}
	return input, nil
}

func begin(ctx context.Context, plan *flows.Plan, cfg *Config, opts *engine.Options) (*rundir.Writer, *rundir.Snapshot, error) {
	input, err := prepare(plan, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	if cfg.RunsDir == "" {
		cfg.RunsDir = filepath.Join(cfg.WorkDir, ".flow", "runs")
	}
	w, err := rundir.Create(cfg.RunsDir, opts.RunID, secrets(plan, opts)...)
	if err != nil {
		return nil, nil, err
	}
	opts.RunID = w.ID()
	snap := NewSnapshot(opts.RunID, plan, input, settings(cfg, opts))
	snap.Repos = startCommits(ctx, plan, cfg.WorkDir)
	if len(opts.Repos) > 0 { // the caller's (a fork's: the original's starts) win
		if snap.Repos == nil {
			snap.Repos = map[string]string{}
		}
		maps.Copy(snap.Repos, opts.Repos)
	}
	opts.Repos = snap.Repos
	if err := w.WriteSnapshot(snap); err != nil {
		_ = w.Close()
		return nil, nil, err
	}
	return w, snap, nil
}

// secrets are the values the run directory must redact besides those of
// the environment variables named like secrets: the caller's and the
// values of the variables the agents take their keys from.
func secrets(plan *flows.Plan, o *engine.Options) []string {
	out := slices.Clone(o.Secrets)
	for _, a := range plan.Agents {
		if a.APIKeyEnv != "" {
			out = append(out, os.Getenv(a.APIKeyEnv))
		}
	}
	return out
}

func settings(cfg *Config, o *engine.Options) rundir.Settings {
	s := rundir.Settings{Model: o.Settings.Model, Models: o.Settings.Models, Concurrency: o.Concurrency, WorkDir: cfg.WorkDir, Config: o.Config}
	if o.Settings.Timeout > 0 {
		s.Timeout = o.Settings.Timeout.String()
	}
	if o.Settings.TurnTimeout > 0 {
		s.TurnTimeout = o.Settings.TurnTimeout.String()
	}
	return s
}

// run walks the plan on the host of w, with cfg and opts prepared (engine.Walk
// checks the input again, to the same result), closes w, and ends every
// process the run left. earlier holds the facts of earlier
// attempts when the run resumes.
func run(ctx context.Context, plan *flows.Plan, cfg Config, opts engine.Options, w *rundir.Writer, earlier []*record.Fact) (res *engine.Result, err error) {
	defer func() {
		// A run ends every process it started, daemons a step left included:
		// the groups and the orphans it knows of, no /proc scan in a
		// subreaper (proc.EndRun).
		_, _ = proc.EndRun(opts.RunID, proc.DefaultGrace)
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing run directory: %w", cerr)
		}
	}()
	var del engine.Delegator
	if cfg.Delegates != nil {
		d, closeDelegates := cfg.Delegates(w.Dir())
		defer closeDelegates()
		del = d
	}
	return engine.Walk(ctx, plan, opts, hostOf(cfg.Runtime, cfg.Leaves, w, del, filepath.Join(cfg.RunsDir, opts.RunID), cfg.WorkDir), earlier)
}

// Resume continues the run in dir from its first unended visit
// (docs/resume-and-budgets.md), in this process: it runs the run's
// snapshot (the flows and agents as they were read, the same input and
// model), and every visit that ended keeps its recorded outcome and is
// not run again. Processes the dead engine left are ended first. load
// says where agents come from and which drivers exist; cfg gives the
// drivers (its RunsDir and WorkDir are the run's own), opts the live view
// and a new --timeout (Settings.Timeout) if any (its RunID, Input and
// Settings.Model and Models are the run's own).
func Resume(ctx context.Context, dir string, load flows.Options, cfg Config, opts engine.Options) (*engine.Result, error) {
	info, err := rundir.Inspect(dir)
	if err != nil {
		return nil, err
	}
	if !info.Resumable {
		return nil, &engine.RefusedError{Msg: fmt.Sprintf("run %s cannot be resumed: %s", info.ID, info.Why)}
	}
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil {
		return nil, err
	}
	plan, diags := flows.Reload(snap.File, snap.Sources(), snap.Agents, snap.Settings.WorkDir, load)
	if diags.HasErrors() {
		return nil, &engine.RefusedError{Msg: fmt.Sprintf("the snapshot of run %s does not load any more:\n%s", info.ID, diags.Error())}
	}
	timeout, turnTimeout := snap.Settings.Durations()
	if opts.Settings.Timeout == 0 {
		opts.Settings.Timeout = timeout
	}
	opts.Settings.Model, opts.Settings.Models, opts.Settings.TurnTimeout = snap.Settings.Model, snap.Settings.Models, turnTimeout
	opts.Input, cfg.WorkDir, opts.Config = snap.Input, snap.Settings.WorkDir, snap.Settings.Config
	opts.RunID, cfg.RunsDir, opts.Repos = info.ID, filepath.Dir(dir), snap.Repos
	if opts.Concurrency <= 0 {
		opts.Concurrency = snap.Settings.Concurrency
	}
	if _, err := prepare(plan, &cfg, &opts); err != nil {
		return nil, err
	}
	w, earlier, err := rundir.Reopen(dir, secrets(plan, &opts)...)
	if err != nil {
		return nil, err
	}
	opts.Notes = []string{fmt.Sprintf("resuming run %s (%s, %s)", info.ID, info.Flow, info.Status)}
	if opts.Killed, err = rundir.Killed(dir, earlier); err != nil {
		opts.Notes = append(opts.Notes, "reading what the killed attempts spent: "+err.Error())
	}
	for _, f := range snap.Changed() {
		opts.Notes = append(opts.Notes, f+" changed since the run started; resuming the run's snapshot of it")
	}
	if n := endLeftovers(info.ID); n > 0 {
		opts.Notes = append(opts.Notes, fmt.Sprintf("ended %d process(es) left by the interrupted run", n))
	}
	return run(ctx, plan, cfg, opts, w, earlier)
}

// endLeftovers ends every process still carrying the run's tag that a dead
// engine left, reparented to init or a subreaper, not to this process: a
// /proc scan is needed (proc.KillTagged). It returns how many it found.
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

// workspace is the run directory's workspace, with the content identity
// of a directory read through git in this process.
type workspace struct{ *rundir.Writer }

// Tree is the git tree of dir's content (gitwork.ContentTree).
func (workspace) Tree(ctx context.Context, dir string) string {
	return gitwork.ContentTree(ctx, dir)
}
