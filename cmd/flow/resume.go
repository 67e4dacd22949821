package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/rundir"
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
			if timeout < 0 {
				return invalid("--timeout %v: a timeout is a positive duration (e.g. 90s, 10m)", timeout)
			}
			dir, err := a.findRun(args, true)
			if err != nil {
				return err
			}
			snap, err := rundir.ReadSnapshot(dir)
			if err == nil && snap.Temporal != nil {
				return a.attach(cmd.Context(), dir, snap.Temporal, tf, asJSON)
			}
			// The drivers the rest of the run needs, checked before it goes on
			// (a snapshot that does not load is engine.Resume's to report).
			if err == nil {
				if plan, diags := snap.Load(a.loadOptions()); !diags.HasErrors() {
					if _, err := a.preflight(cmd.Context(), plan); err != nil {
						return err
					}
				}
			}
			return a.execute(cmd.Context(), asJSON, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
				opts.Settings.Timeout = timeout
				return engine.Resume(ctx, dir, a.loadOptions(), opts)
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
		return "", invalid("no run %q in %s", args[0], runsDir)
	}
	runs, err := rundir.List(runsDir)
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

// attach continues a run on Temporal whose mirror here is behind: its
// client died, or it ended and may be resumed (docs/temporal.md).
func (a *app) attach(ctx context.Context, dir string, ref *rundir.TemporalRun, f temporalFlags, asJSON bool) error {
	if f.address == "" {
		f.address = ref.Address
	}
	if f.namespace == "" {
		f.namespace = ref.Namespace
	}
	if f.taskQueue == "" {
		f.taskQueue = ref.TaskQueue
	}
	f = a.temporalSettings(f)
	c, err := a.dialTemporal(ctx, f)
	if err != nil {
		return err
	}
	defer c.Close()
	tc := a.temporalClient(c, f)
	return a.execute(ctx, asJSON, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
		return tc.Attach(ctx, dir, opts.OnEvent)
	})
}
