package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/sweep"
)

// temporalFlags are the flags of the commands that talk to Temporal; each
// falls back to its configuration key (temporal.address, …).
type temporalFlags struct {
	address   string
	namespace string
	taskQueue string
	// service says the command is a long-lived service (flow worker,
	// flow serve), started with its server under compose or systemd: it
	// waits for the server, temporal.connect_wait at most.
	service bool
	// letGoWaits says the command lets go of a run that holds nothing but
	// waits, and wakes it itself (flow serve; docs/waits.md, On Temporal).
	letGoWaits bool
}

func (f *temporalFlags) add(fl *pflag.FlagSet, what string) {
	fl.StringVar(&f.address, "temporal", "", what+" (HOST:PORT of a Temporal server; see docs/temporal.md)")
	fl.StringVar(&f.namespace, "namespace", "", "the Temporal namespace (default \"default\")")
	fl.StringVar(&f.taskQueue, "task-queue", "", "the Temporal task queue of runs and workers (default \"flow\")")
}

// temporalSettings fills what the flags leave out from the configuration.
func (a *app) temporalSettings(f temporalFlags) temporalFlags {
	if f.address == "" {
		f.address = a.cfg.GetString("temporal.address")
	}
	if f.namespace == "" {
		f.namespace = a.cfg.GetString("temporal.namespace")
	}
	if f.namespace == "" {
		f.namespace = "default"
	}
	if f.taskQueue == "" {
		f.taskQueue = a.cfg.GetString("temporal.task_queue")
	}
	if f.taskQueue == "" {
		f.taskQueue = runner.DefaultTaskQueue
	}
	return f
}

// dialTemporal connects to the Temporal server of f. Temporal's own log
// goes to stderr, warnings and worse only.
func (a *app) dialTemporal(ctx context.Context, f temporalFlags) (client.Client, error) {
	return a.dialTemporalWaiting(ctx, f, 0)
}

// dialTemporalWaiting is dialTemporal that, for up to wait, tries again
// while the server does not answer (a worker started with its server,
// whose frontend is not healthy yet), saying so on stderr each time.
// It returns nil and no error if ctx ends meanwhile.
func (a *app) dialTemporalWaiting(ctx context.Context, f temporalFlags, wait time.Duration) (client.Client, error) {
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	key, err := a.temporalKey()
	if err != nil {
		return nil, err
	}
	data, failures := runner.TemporalConverters(key)
	giveUp := time.Now().Add(wait)
	pause := 500 * time.Millisecond
	for {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := client.DialContext(dctx, client.Options{HostPort: f.address, Namespace: f.namespace, Logger: tlog.NewStructuredLogger(logger),
			DataConverter: data, FailureConverter: failures, ContextPropagators: runner.TemporalPropagators()})
		cancel()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if !time.Now().Add(pause).Before(giveUp) {
			if wait > 0 {
				return nil, invalid("connecting to Temporal at %s: %v (gave up after %s, temporal.connect_wait; is a server running there? see docs/temporal.md)", f.address, err, wait)
			}
			return nil, invalid("connecting to Temporal at %s: %v (is a server running there? see docs/temporal.md)", f.address, err)
		}
		fmt.Fprintf(a.stderr, "flow: Temporal at %s does not answer yet (%s); trying again in %s, for up to %s in all\n",
			f.address, oneLineErr(err), pause, wait)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
	}
}

// connectWait is how long a service (flow worker, flow serve) waits for
// a Temporal server that does not answer yet: temporal.connect_wait,
// 5 minutes by default.
func (a *app) connectWait() time.Duration {
	if !a.cfg.IsSet("temporal.connect_wait") {
		return 5 * time.Minute
	}
	return a.cfg.GetDuration("temporal.connect_wait")
}

// oneLineErr is err's message on one line.
func oneLineErr(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// temporalKey is the key that encrypts what runs put in Temporal's
// history (temporal.key, FLOW_TEMPORAL_KEY; docs/temporal.md). Without
// one, history holds flow data in clear: say so once.
func (a *app) temporalKey() (runner.TemporalKey, error) {
	var old []string
	for _, s := range a.cfg.GetStringSlice("temporal.old_keys") {
		old = append(old, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })...)
	}
	key, err := runner.ParseTemporalKeys(a.cfg.GetString("temporal.key"), old)
	if err != nil {
		return key, invalid("%v", err)
	}
	if len(old) > 0 {
		// Each old key is a secret of its own: redacted wherever flow writes.
		for _, k := range old {
			a.learn(secret.Named{Name: "temporal.old_keys", Value: k})
		}
	}
	if !key.Set() {
		if a.warned == nil {
			a.warned = map[string]bool{}
		}
		if !a.warned["temporal.key"] {
			a.warned["temporal.key"] = true
			fmt.Fprintln(a.stderr, "warning: temporal.key (FLOW_TEMPORAL_KEY) is not set: Temporal's history holds the runs' prompts, inputs and outputs in clear (docs/temporal.md)")
		}
	}
	return key, nil
}

// onTemporal is the runner's backend that hands runs to the Temporal
// server c is connected to and mirrors them here.
func (a *app) onTemporal(c client.Client, f temporalFlags, leaves ...runner.LeafOption) (runner.Backend, error) {
	r, err := a.runner()
	if err != nil {
		return nil, err
	}
	key, _ := a.temporalKey() // dialTemporal read it
	return r.OnTemporal(c, runner.TemporalConfig{Key: key, Address: f.address, Namespace: f.namespace, TaskQueue: f.taskQueue,
		Heartbeat: a.cfg.GetDuration("temporal.heartbeat"), SessionWait: a.cfg.GetDuration("temporal.session_wait"), LetGoWhileWaiting: f.letGoWaits}, leaves...), nil
}

// backend is where runs of f go: Temporal, when f (or the configuration)
// names a server, else this process, its leaves answered as leaves say.
// done closes the connection.
func (a *app) backend(ctx context.Context, f temporalFlags, leaves ...runner.LeafOption) (b runner.Backend, done func(), err error) {
	if f = a.temporalSettings(f); f.address == "" {
		b, err := a.local(leaves...)
		return b, func() {}, err
	}
	var c client.Client
	if f.service {
		c, err = a.dialTemporalWaiting(ctx, f, a.connectWait())
	} else {
		c, err = a.dialTemporal(ctx, f)
	}
	if err != nil {
		return nil, nil, err
	}
	if c == nil { // ctx ended while waiting
		return nil, nil, context.Cause(ctx)
	}
	if b, err = a.onTemporal(c, f, leaves...); err != nil {
		c.Close()
		return nil, nil, err
	}
	return b, c.Close, nil
}

// sweepTemporal is the Temporal server a sweep's cells run on, or nil
// for this process. A new sweep (resume false) takes --temporal, else
// the configuration's temporal.address. A resume takes --temporal, else
// the server the sweep recorded: a sweep resumes where it was made.
func (a *app) sweepTemporal(f temporalFlags, resume bool, recorded *sweep.Temporal) *sweep.Temporal {
	switch {
	case resume && recorded == nil && f.address == "":
		return nil
	case resume && recorded != nil:
		f.address = cmp.Or(f.address, recorded.Address)
		f.namespace = cmp.Or(f.namespace, recorded.Namespace)
		f.taskQueue = cmp.Or(f.taskQueue, recorded.TaskQueue)
	}
	if f = a.temporalSettings(f); f.address == "" {
		return nil
	}
	return &sweep.Temporal{Address: f.address, Namespace: f.namespace, TaskQueue: f.taskQueue}
}

// sweepBackend is what walks a sweep's cells: this process, or the
// Temporal server t. done closes the connection.
func (a *app) sweepBackend(t *sweep.Temporal) (b runner.Backend, done func(), err error) {
	if t == nil {
		b, err := a.local()
		return b, func() {}, err
	}
	tf := temporalFlags{address: t.Address, namespace: t.Namespace, taskQueue: t.TaskQueue}
	return a.backend(context.Background(), tf)
}

type workerFlags struct {
	temporalFlags
	runsDir     string
	workDir     string
	concurrency int
}

func (a *app) workerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker --temporal HOST:PORT",
		Short: "Run the visits of Temporal runs on this machine",
		Long: "Poll a Temporal server for runs (flow run --temporal) and run their visits here: agent\n" +
			"turns with the drivers this machine is configured with, as flow run would, and run:\n" +
			"commands. Each worker also polls a task queue of its own, where the later turns of a\n" +
			"memory scope find the session it holds. Homes and transcripts stay in this\n" +
			"machine's runs directory. SIGTERM or Ctrl-C stops it; Temporal moves its unfinished\n" +
			"visits to other workers. See docs/temporal.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.worker(cmd.Context(), f) },
	}
	f.temporalFlags.add(cmd.Flags(), "the server to take visits from")
	cmd.Flags().StringVar(&f.runsDir, "runs-dir", "", "where this worker keeps homes and transcripts (default: the runs directory, .flow/runs)")
	cmd.Flags().IntVar(&f.concurrency, "concurrency", 0, "the most visits this worker runs at once (default: as many as Temporal hands it)")
	cmd.Flags().StringVar(&f.workDir, "workdir", "", "where visits work on this machine (default: each run's own working directory, which must exist here)")
	return cmd
}

func (a *app) worker(ctx context.Context, f workerFlags) error {
	tf := a.temporalSettings(f.temporalFlags)
	if tf.address == "" {
		return invalid("flow worker needs --temporal HOST:PORT (or temporal.address in the configuration)")
	}
	r, err := a.runner()
	if err != nil {
		return err
	}
	runsDir := f.runsDir
	if runsDir == "" {
		runsDir = a.cfg.GetString("runs_dir")
	}
	// Homes are handed to agent programs that work elsewhere: absolute.
	if runsDir, err = filepath.Abs(runsDir); err != nil {
		return invalid("--runs-dir: %v", err)
	}
	if f.workDir != "" {
		if st, err := os.Stat(f.workDir); err != nil || !st.IsDir() {
			return invalid("--workdir %s is not a directory", f.workDir)
		}
		if f.workDir, err = filepath.Abs(f.workDir); err != nil {
			return invalid("--workdir: %v", err)
		}
	}
	if f.concurrency < 0 {
		return invalid("--concurrency %d: give the most visits at once, or 0 for no limit of flow's", f.concurrency)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A worker may start before its server (compose, systemd): it waits
	// for it.
	c, err := a.dialTemporalWaiting(ctx, tf, a.connectWait())
	if err != nil || c == nil {
		return err
	}
	defer c.Close()
	w := r.Worker(c, tf.taskQueue, runner.WorkerConfig{RunsDir: runsDir, WorkDir: f.workDir, Concurrency: f.concurrency})
	fmt.Fprintf(a.stderr, "worker %s takes visits from task queue %s on Temporal at %s; homes in %s\n", w.Queue(), tf.taskQueue, tf.address, runsDir)
	return w.Run(ctx)
}

// temporalTroubles are the distinct notes the mirror of a Temporal run
// made of what held it up (runner.TemporalTroubleNote: a worker without the
// run's key, a refused signal), the last ten, for flow show. A local run
// has none.
func temporalTroubles(dir string) []string {
	if snap, err := rundir.ReadSnapshot(dir); err != nil || snap.Temporal == nil {
		return nil
	}
	notes, _ := rundir.Notes(dir, runner.TemporalTroubleNote)
	return notes[max(0, len(notes)-10):]
}
