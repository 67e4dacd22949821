package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/proc"
)

func (a *app) resumeCmd() *cobra.Command {
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue a run from its first unended visit; ended visits never run again",
		Long: "Continue the newest resumable run of this directory, or RUN (an id or a run\n" +
			"directory). The run's snapshot runs, not the file as it is now; input and\n" +
			"model stay as they were; only --timeout may change. Every visit that ended\n" +
			"keeps its recorded outcome and is not run again.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.findRun(args, true)
			if err != nil {
				return err
			}
			return a.resume(cmd, dir, timeout, asJSON)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "bound on each agent turn from now on")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the event stream as JSON lines")
	return cmd
}

// findRun resolves RUN (an id or a directory), or with no argument the
// newest run (the newest resumable one when resumable is set).
func (a *app) findRun(args []string, resumable bool) (string, error) {
	runsDir := a.cfg.GetString("runs_dir")
	if len(args) == 1 {
		for _, dir := range []string{args[0], filepath.Join(runsDir, args[0])} {
			if _, err := os.Stat(filepath.Join(dir, "journal.jsonl")); err == nil {
				return dir, nil
			}
		}
		return "", invalid("no run %q in %s", args[0], runsDir)
	}
	runs, err := engine.ListRuns(runsDir)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if !resumable || r.Resumable {
			return r.Dir, nil
		}
	}
	if resumable {
		return "", invalid("no resumable run in %s", runsDir)
	}
	return "", invalid("no runs in %s", runsDir)
}

func (a *app) resume(cmd *cobra.Command, dir string, timeout time.Duration, asJSON bool) error {
	info, err := engine.Inspect(dir)
	if err != nil {
		return invalid("%v", err)
	}
	if !info.Resumable {
		return invalid("run %s cannot be resumed: %s", info.ID, info.Why)
	}
	snap, err := engine.ReadSnapshot(dir)
	if err != nil {
		return invalid("%v", err)
	}
	opts := a.loadOptions()
	opts.Sources = map[string][]byte{}
	for _, f := range snap.Flows {
		opts.Sources[f.File] = []byte(f.Source)
		if now, err := os.ReadFile(f.File); err == nil && string(now) != f.Source {
			fmt.Fprintf(a.stderr, "note: %s changed since the run started; resuming the run's snapshot of it\n", f.File)
		}
	}
	opts.Agents = []*flows.Agent{}
	for name, raw := range snap.Agents {
		var ag flows.Agent
		if err := json.Unmarshal(raw, &ag); err != nil {
			return invalid("reading snapshot agent %s: %v", name, err)
		}
		opts.Agents = append(opts.Agents, &ag)
	}
	if snap.Settings.WorkDir != "" {
		opts.WorkDir = snap.Settings.WorkDir
	}
	plan, diags := flows.Load(snap.File, opts)
	a.printDiagnostics(diags)
	if diags.HasErrors() {
		return invalid("the snapshot of run %s does not load any more", info.ID)
	}
	if timeout == 0 && snap.Settings.Timeout != "" {
		timeout, _ = time.ParseDuration(snap.Settings.Timeout)
	}
	// Processes the dead engine left are ended before anything runs again.
	if n, _ := proc.KillTagged(info.ID, proc.DefaultGrace); n > 0 {
		fmt.Fprintf(a.stderr, "ended %d process(es) left by the interrupted run\n", n)
	}
	fmt.Fprintf(a.stderr, "resuming run %s (%s, %s)\n", info.ID, info.Flow, info.Status)
	return a.execute(cmd.Context(), plan, runSpec{
		runID: info.ID, runsDir: filepath.Dir(dir), input: snap.Input, model: snap.Settings.Model,
		timeout: timeout, json: asJSON, workDir: snap.Settings.WorkDir, resume: &engine.Resume{Facts: info.Facts},
	})
}
