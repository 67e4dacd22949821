package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/rundir"
)

func (a *app) gcCmd() *cobra.Command {
	var dryRun bool
	var olderThan string
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove the git worktrees that runs kept (failed or conflicted isolated scopes)",
		Long: "Remove the git worktrees that ended runs kept: isolated scopes that failed or\n" +
			"conflicted, and runs that were stopped or died (docs/worktrees.md). Runs that\n" +
			"are running are left alone. Branches stay: flow/<run-id> and the branches of\n" +
			"kept scopes are yours to merge or delete; flow resume makes a removed worktree\n" +
			"again from its branch.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan != "" {
				return a.gcRuns(olderThan, dryRun)
			}
			kept, err := rundir.RemoveKeptWorktrees(cmd.Context(), a.cfg.GetString("runs_dir"), dryRun)
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			removed := 0
			for _, k := range kept {
				if k.Skipped != "" {
					fmt.Fprintf(a.stderr, "flow gc: left alone %s (run %s, %s): %s\n", k.Path, k.Run, k.Scope, k.Skipped)
					continue
				}
				if k.Err != nil {
					continue
				}
				removed++
				fmt.Fprintf(a.stdout, "%s %s  (run %s, %s; branch %s stays)\n", verb, k.Path, k.Run, k.Scope, k.Branch)
			}
			if removed == 0 {
				fmt.Fprintln(a.stdout, "no worktree to remove")
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "list the worktrees, remove nothing")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "instead, remove the runs (recordings) started before this date, time or age (2026-11-30, 720h)")
	return cmd
}

// gcRuns removes the runs started before --older-than.
func (a *app) gcRuns(olderThan string, dryRun bool) error {
	before, err := rundir.ParseOlderThan(olderThan, time.Now())
	if err != nil {
		return invalid("%v", err)
	}
	gone, err := rundir.RemoveRunsBefore(a.cfg.GetString("runs_dir"), before, dryRun)
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, r := range gone {
		fmt.Fprintf(a.stdout, "%s run %s  (flow %s, %s, started %s)\n", verb, r.ID, r.Flow, r.Status, r.Started.UTC().Format(time.RFC3339))
	}
	if len(gone) == 0 {
		fmt.Fprintln(a.stdout, "no run to remove")
	}
	return err
}
