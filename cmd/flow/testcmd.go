package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
)

type testFlags struct {
	runFlags
	cassette     string
	record       bool
	liveCommands bool
	stubCommands bool // accepted, the default: commands are answered from the recording
}

func (a *app) testCmd() *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test FILE",
		Short: "Run a flow offline, every agent turn answered from a recording",
		Long: "Run a flow with no driver process and no network: every agent turn is\n" +
			"answered from the cassette (or run) by its visit key, and a turn the\n" +
			"recording does not hold fails the test, naming the visit and the first\n" +
			"input that differs, with a diff. run: commands are answered from the\n" +
			"recording too (what they printed when recorded), except those whose\n" +
			"node says reuse: never; --live-commands runs every command for real.\n" +
			"With --record the flow runs live and its recording is kept as the\n" +
			"cassette directory (default FILE's name + .cassette). Test runs are\n" +
			"kept apart from runs, in tests_dir (default .flow/tests).\n" +
			"Exit 0 if the flow succeeded, 1 if it failed or missed the recording.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.test(cmd.Context(), args[0], f, cmd.Flags().Changed("input") || cmd.Flags().Changed("input-file") || cmd.Flags().Changed("set"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "the run's input as JSON (default: the input the cassette was recorded with)")
	fl.StringVar(&f.inputFile, "input-file", "", "read the input (JSON) from a file")
	fl.StringArrayVarP(&f.inputKV, "set", "i", nil, "one input field, key=value (repeatable)")
	fl.StringVar(&f.cassette, "cassette", "", "the recording: a cassette directory or a run (default FILE's name + .cassette)")
	fl.BoolVar(&f.record, "record", false, "run live and keep the recording as the cassette")
	fl.BoolVar(&f.liveCommands, "live-commands", false, "run every run: command for real instead of answering it from the recording")
	fl.BoolVar(&f.stubCommands, "stub-commands", false, "the default: answer run: commands from the recording")
	_ = fl.MarkHidden("stub-commands") // kept so that scripts written for it still run
	fl.BoolVar(&f.json, "json", false, "write the event stream as JSON lines")
	return cmd
}

func (a *app) test(ctx context.Context, file string, f testFlags, inputGiven bool) error {
	plan, err := a.load(file)
	if err != nil {
		return err
	}
	if f.liveCommands && f.stubCommands {
		return invalid("--live-commands and --stub-commands contradict each other: give one")
	}
	runsDir := a.cfg.GetString("runs_dir")
	testsDir := a.cfg.GetString("tests_dir") // test runs are not runs: never a flow's last run, never resumed
	cassette := f.cassette
	if cassette == "" {
		cassette = strings.TrimSuffix(file, filepath.Ext(file)) + ".cassette"
	} else if dir, ok := rundir.Find(runsDir, cassette); ok && !f.record {
		cassette = dir
	}
	input, err := parseInput(plan.Root, f.runFlags)
	if err != nil {
		return invalid("%v", err)
	}
	if f.record {
		if err := reuse.CheckCassetteDir(cassette); err != nil {
			return invalid("%v", err)
		}
		var dir string
		backend, err := a.local()
		if err != nil {
			return err
		}
		err = a.execute(ctx, f.json, backend, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
			opts.Input, opts.Settings = input, a.runSettings("", 0)
			res, err := backend.Start(ctx, plan, runner.Host{RunsDir: testsDir}, opts)
			if res != nil {
				dir = res.Dir
			}
			return res, err
		})
		if err != nil {
			return err
		}
		if err := reuse.WriteCassette(dir, cassette); err != nil {
			nc, se := (*reuse.NotCassetteError)(nil), (*reuse.SecretError)(nil)
			if errors.As(err, &nc) || errors.As(err, &se) {
				return invalid("%v", err)
			}
			return fmt.Errorf("keeping the cassette: %w", err)
		}
		fmt.Fprintf(a.stderr, "recorded the cassette %s\n", cassette)
		return nil
	}
	if !rundir.HasJournal(cassette) {
		return invalid("%s: no cassette or run there; record one with flow test --record %s", cassette, file)
	}
	if !inputGiven {
		if in, err := reuse.CassetteInput(cassette); err != nil {
			return invalid("%v", err)
		} else if in != nil {
			input = in
		}
	}
	set, err := reuse.Open(runsDir, cassette)
	if err != nil {
		return invalid("%v", err)
	}
	r, err := a.runner()
	if err != nil {
		return err
	}
	leaves := r.Replay(set, f.liveCommands)
	backend := r.Local(runner.Answered(leaves))
	err = a.execute(ctx, f.json, backend, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
		opts.Input, opts.Settings = input, a.runSettings("", 0)
		return backend.Start(ctx, plan, runner.Host{RunsDir: testsDir}, opts)
	})
	for _, m := range leaves.Misses() {
		fmt.Fprintf(a.stderr, "flow test: %s does not match the recording: %s\n", m.Visit, m.Reason)
		if m.Diff != "" {
			fmt.Fprintln(a.stderr, m.Diff)
		}
	}
	if err == nil {
		fmt.Fprintf(a.stderr, "flow test: %s passed against %s\n", file, cassette)
	}
	return err
}

// isTestRun says whether dir is a run of flow test (under tests_dir): its
// failure is never answered with resume, which would run the agents live.
func (a *app) isTestRun(dir string) bool {
	tests, err := filepath.Abs(a.cfg.GetString("tests_dir"))
	if err != nil {
		return false
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(tests, d)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}
