package main

import (
	"cmp"
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
)

func (a *app) resumeCmd() *cobra.Command {
	var timeout time.Duration
	var asJSON bool
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue a run from its first unended visit; ended visits never run again",
		Long: "Continue the newest resumable run of this directory, or RUN (an id or a run\n" +
			"directory). The run's snapshot runs, not the file as it is now; input and\n" +
			"model stay as they were; only --timeout may change. Every visit that ended\n" +
			"keeps its recorded outcome and is not run again.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTimeout(timeout); err != nil {
				return err
			}
			dir, err := a.findRun(args, true)
			if err != nil {
				return err
			}
			backend, done, err := a.resumeBackend(cmd.Context(), dir, tf)
			if err != nil {
				return err
			}
			defer done()
			// The runner's backend checks the drivers the rest of the run
			// needs before it goes on.
			return a.execute(cmd.Context(), asJSON, backend, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
				opts.Settings.Timeout = timeout
				return backend.Resume(ctx, dir, runner.Host{}, opts)
			})
		},
	}
	tf.add(cmd.Flags(), "for a run on Temporal: the server to re-attach to, if not the one it started on")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "bound on each agent turn from now on")
	cmd.Flags().BoolVar(&asJSON, "json", false, "write the event stream as JSON lines")
	return cmd
}

// findRun resolves RUN (an id or a directory), or with no argument the
// newest run (the newest resumable one when resumable is set).
func (a *app) findRun(args []string, resumable bool) (string, error) {
	runsDir := a.cfg.GetString("runs_dir")
	if len(args) == 1 {
		if dir, ok := rundir.Find(runsDir, args[0]); ok {
			return dir, nil
		}
		if dir, ok, err := nthLatest(runsDir, args[0]); ok || err != nil {
			return dir, err
		}
		return "", invalid("no run %q in %s", args[0], runsDir)
	}
	runs, err := rundir.Summaries(runsDir)
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

// resumeBackend is where the run in dir resumes: the Temporal server it
// was walked on (or the one f names), re-attached to when its mirror here
// is behind (docs/temporal.md), else this process.
func (a *app) resumeBackend(ctx context.Context, dir string, f temporalFlags) (runner.Backend, func(), error) {
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil || snap.Temporal == nil {
		b, err := a.local()
		return b, func() {}, err
	}
	ref := snap.Temporal
	f.address = cmp.Or(f.address, ref.Address)
	f.namespace = cmp.Or(f.namespace, ref.Namespace)
	f.taskQueue = cmp.Or(f.taskQueue, ref.TaskQueue)
	return a.backend(ctx, f)
}
