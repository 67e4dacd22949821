package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/serve"
)

type serveFlags struct {
	addr      string
	tokenFile string
	maxRuns   int
	maxQueued int
	hosts     []string
	poll      time.Duration
	temporal  temporalFlags
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Fire the schedules of DIR's flows; serve a status page, an API and metrics",
		Long: "Load every flow file of DIR (a broken one is reported and skipped; changed files\n" +
			"reload), fire their schedules, run them under a server-wide cap into the usual\n" +
			"run directories, and serve a status page, a JSON API and /metrics. Loopback\n" +
			"only unless --token-file is given. SIGTERM stops firing and stops running runs\n" +
			"(resumable); the next `flow serve DIR` resumes them. See docs/serve.md.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.serve(cmd.Context(), args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "where to listen (host:port); other than loopback needs --token-file")
	fl.StringVar(&f.tokenFile, "token-file", "", "a `file` of bearer tokens, one name and token per line")
	fl.IntVar(&f.maxRuns, "max-runs", 4, "runs alive at once; the rest wait in a queue")
	fl.IntVar(&f.maxQueued, "max-queued", serve.DefaultMaxQueued, "runs waiting in the queue at most; past it a run is refused (429)")
	fl.StringArrayVar(&f.hosts, "host", nil, "a `name` requests may give as Host besides loopback ones (repeatable)")
	fl.DurationVar(&f.poll, "poll", time.Second, "how often DIR is read for changed files")
	f.temporal.add(fl, "run every run on Temporal, and make schedules Temporal Schedules")
	return cmd
}

func (a *app) serve(ctx context.Context, dir string, f serveFlags) error {
	if f.maxQueued < 1 {
		return invalid("--max-queued %d: give 1 or more", f.maxQueued)
	}
	for _, h := range f.hosts {
		if h == "" || strings.ContainsAny(h, "/ :\t\r\n") {
			return invalid("--host %q: give a host name, without a port or scheme", h)
		}
	}
	var tokens []serve.Token
	if f.tokenFile != "" {
		var err error
		if tokens, err = serve.ReadTokens(f.tokenFile); err != nil {
			return invalid("--token-file: %v", err)
		}
	}
	// Like flow worker, the server may start before Temporal does; it
	// wakes the runs that wait, and holds no slot for them meanwhile.
	f.temporal.service, f.temporal.letGoWaits = true, true
	backend, done, err := a.backend(ctx, f.temporal)
	if err != nil {
		return err
	}
	defer done()
	srv, err := serve.New(serve.Config{Backend: backend, Dir: dir, Addr: f.addr, Tokens: tokens, RunsDir: a.cfg.GetString("runs_dir"),
		Load: a.loadOptions(), MaxRuns: f.maxRuns, MaxQueued: f.maxQueued, Hosts: f.hosts, Poll: f.poll, Log: slog.New(slog.NewTextHandler(a.stderr, nil))})
	if err != nil {
		return invalid("%v", err)
	}
	// SIGTERM or Ctrl-C: stop firing, stop running runs (resumable), exit 0.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = srv.Run(ctx)
	var busy *serve.BusyError
	if errors.As(err, &busy) {
		return &exitError{code: exitFailed, msg: "flow: " + err.Error()}
	}
	return err
}
