package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/steps/drivers"
)

type runFlags struct {
	input     string
	inputFile string
	inputKV   []string
	model     string
	timeout   time.Duration
	json      bool
	reuse     string
	temporal  temporalFlags
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a flow and record it in a run directory",
		Long: "Run a flow: check it whole, then run its agents and commands, recording\n" +
			"every visit in .flow/runs/<run-id>/. Exit 0 if the run succeeded, 1 if it\n" +
			"failed, 2 if the flow or the command line is invalid, 130 if interrupted.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.run(cmd.Context(), args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "the run's input as JSON (or plain text for a string input)")
	fl.StringVar(&f.inputFile, "input-file", "", "read the input (JSON) from a file")
	fl.StringArrayVarP(&f.inputKV, "set", "i", nil, "one input field, key=value (repeatable)")
	fl.StringVar(&f.model, "model", "", "run every agent on this model")
	fl.DurationVar(&f.timeout, "timeout", 0, "bound on each agent turn (e.g. 90s, 10m)")
	fl.BoolVar(&f.json, "json", false, "write the event stream as JSON lines")
	fl.StringVar(&f.reuse, "reuse", "", "answer visits whose key an earlier run recorded from it: last (the default), or RUN[,RUN]")
	fl.Lookup("reuse").NoOptDefVal = "last"
	f.temporal.add(fl, "run on Temporal: the walk is a workflow, its visits run on flow workers")
	return cmd
}

func (a *app) run(ctx context.Context, file string, f runFlags) error {
	if err := checkTimeout(f.timeout); err != nil {
		return err
	}
	plan, err := a.load(file)
	if err != nil {
		return err
	}
	input, err := parseInput(plan.Root, f)
	if err != nil {
		return invalid("%v", err)
	}
	var reused []string
	if f.reuse != "" {
		if reused, err = reuseDirs(a.cfg.GetString("runs_dir"), plan.Root.Name, f.reuse); err != nil {
			return invalid("%v", err)
		}
	}
	var leaves []runner.LeafOption
	if reused != nil {
		leaves = append(leaves, runner.Reuse(a.cfg.GetString("runs_dir"), reused...))
	}
	backend, done, err := a.backend(ctx, f.temporal, leaves...)
	if err != nil {
		return err
	}
	defer done()
	if a.temporalSettings(f.temporal).address == "" {
		// Said before the live view starts (the runner checks again, and
		// on Temporal the visits run on workers, whose machines have the
		// CLIs).
		if _, err := a.preflight(ctx, plan); err != nil {
			return err
		}
	}
	return a.execute(ctx, f.json, backend, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
		opts.Input, opts.Settings = input, a.runSettings(f.model, f.timeout)
		return backend.Start(ctx, plan, runner.Host{RunsDir: a.cfg.GetString("runs_dir")}, opts)
	})
}

// checkTimeout refuses a negative --timeout, for flow run and flow resume
// alike.
func checkTimeout(d time.Duration) error {
	if d < 0 {
		return invalid("--timeout %v: a timeout is a positive duration (e.g. 90s, 10m)", d)
	}
	return nil
}

// execute runs a run (or a resume) of backend with the live view and
// signal handling, and turns the result into an exit code. start is given
// what this command adds to the run's input: the view and the asker (the
// backend, from the runner, adds what every run shares).
func (a *app) execute(ctx context.Context, asJSON bool, backend runner.Backend, start func(context.Context, engine.Options) (*engine.Result, error)) error {
	// Ctrl-C or SIGTERM stops the run: running visits end as `stopped`
	// and the command exits 130.
	sigCtx, sigStop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer sigStop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	unhook := context.AfterFunc(sigCtx, func() { backend.Stop(cancel, runner.StopRun) })
	defer unhook()

	var view progressView
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	switch {
	case asJSON:
		view = newJSONView(a.stdout)
	case tty:
		view = newLiveView(a.stderr)
	default:
		view = newPlainView(a.stderr)
	}
	defer view.Close()
	var opts engine.Options
	opts.OnEvent = view.Event
	if !asJSON {
		opts.OnEvent = (&notesFirst{next: view.Event}).Event
	}
	if tty && term.IsTerminal(int(os.Stdin.Fd())) && !asJSON {
		opts.Asker = &terminalAsker{in: os.Stdin, out: a.stderr, view: view}
	}
	res, err := start(ctx, opts)
	var ie *engine.InputError
	var re *engine.RefusedError
	var pe *drivers.PreflightError
	switch {
	case errors.As(err, &pe):
		return &exitError{code: exitInvalid, msg: err.Error() + "\nnothing ran"}
	case errors.As(err, &ie), errors.As(err, &re), errors.Is(err, rundir.ErrLocked):
		return invalid("%v", err)
	case err != nil && res == nil:
		return err
	case err != nil:
		fmt.Fprintf(a.stderr, "warning: %s\n", safeText(err.Error()))
	}
	view.Close()
	if !asJSON {
		a.summary(res)
	}
	switch {
	case res.OK:
		return nil
	case res.Status() == record.StatusStopped:
		return &exitError{code: exitInterrupted}
	case res.Status() == rundir.StatusWaiting:
		return &exitError{code: exitWaiting}
	}
	return &exitError{code: exitFailed}
}

// summary says how a run ended. The output goes to stdout as it is when
// stdout is a pipe (it is data), escaped on a terminal (an agent wrote it).
func (a *app) summary(res *engine.Result) {
	defer a.savedLine(res)
	defer func() {
		for _, o := range res.Overspend {
			fmt.Fprintf(a.stderr, "\toverspent: %s\n", safeText(o.String()))
		}
		if res.InfraInTree {
			fmt.Fprintf(a.stderr, "\t%s\n", infraLine)
		}
	}()
	if res.OK {
		fmt.Fprintf(a.stderr, "run %s succeeded in %s\n", res.RunID, safeText(res.Dir))
		if s := outputText(res.Output); s != "" {
			if isTerminal(a.stdout) {
				s = safeText(s)
			}
			fmt.Fprintln(a.stdout, s)
		}
		return
	}
	if res.Status() == rundir.StatusWaiting {
		a.waitingSummary(res)
		return
	}
	root := res.Failure.Root()
	fmt.Fprintf(a.stderr, "run %s %s: %s: %s: %s\n", res.RunID, res.Status(), root.Visit, root.Kind, safeText(root.Message))
	if root.Pos.IsValid() {
		fmt.Fprintf(a.stderr, "\tat %s\n", root.Pos)
	}
	fmt.Fprintf(a.stderr, "\trun directory: %s\n", safeText(res.Dir))
	if info, err := rundir.Inspect(res.Dir); err == nil && info.Resumable && !a.isTestRun(res.Dir) {
		fmt.Fprintf(a.stderr, "resume with `flow resume %s`\n", res.RunID)
	}
}

func outputText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimRight(x, "\n")
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// parseInput builds the run's input from --input, --input-file and -i.
// Every error names the flag it is about. For a flow whose input is an
// object, a key the input does not declare is refused with a "did you
// mean" — the engine refuses it too; the command line says which flag
// brought it.
func parseInput(f *flows.Flow, fl runFlags) (any, error) {
	stringInput := f.Input == nil || f.Input.Kind == schema.TString
	raw, flag := fl.input, "--input"
	if fl.inputFile != "" {
		if raw != "" {
			return nil, errors.New("give --input or --input-file, not both")
		}
		b, err := os.ReadFile(fl.inputFile)
		if err != nil {
			return nil, fmt.Errorf("reading --input-file: %w", err)
		}
		raw, flag = string(b), "--input-file "+fl.inputFile
	}
	var in any
	if raw != "" {
		var err error
		if in, err = decodeExact([]byte(raw)); err != nil {
			var ne *numberError
			if !stringInput && errors.As(err, &ne) {
				return nil, fmt.Errorf("%s: %v", flag, err)
			}
			if !stringInput {
				return nil, fmt.Errorf("%s is not JSON: %v", flag, err)
			}
			in = raw
		}
		if stringInput {
			if _, ok := in.(string); !ok {
				in = raw
			}
		}
	}
	if m, ok := in.(map[string]any); ok {
		for k := range m {
			if err := checkField(f, k); err != nil {
				return nil, fmt.Errorf("%s: %w", flag, err)
			}
		}
	}
	if len(fl.inputKV) > 0 {
		if stringInput {
			return nil, fmt.Errorf("-i: flow %s takes a string input; use --input TEXT, not -i key=value", f.Name)
		}
		m, isMap := in.(map[string]any)
		switch {
		case in == nil:
			m = map[string]any{}
		case !isMap:
			return nil, fmt.Errorf("-i adds fields to an object, and %s is not one", flag)
		}
		for _, kv := range fl.inputKV {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("-i %q: write key=value", kv)
			}
			if err := checkField(f, k); err != nil {
				return nil, fmt.Errorf("-i %s: %w", k, err)
			}
			m[k] = fieldValue(f.Input, k, v)
		}
		in = m
	}
	return in, nil
}

// checkField refuses a key that an object input does not declare. Inputs
// of other types are checked by the engine.
func checkField(f *flows.Flow, key string) error {
	t := f.Input
	if t == nil || t.Kind != schema.TObject || t.Field(key) != nil {
		return nil
	}
	names := make([]string, len(t.Fields))
	for i, fd := range t.Fields {
		names[i] = fd.Name
	}
	msg := fmt.Sprintf("flow %s has no input %q", f.Name, key)
	if hint := schema.DidYouMean(key, names); hint != "" {
		msg += "; " + hint
	}
	if len(names) > 0 {
		msg += fmt.Sprintf(" (its inputs are %s)", strings.Join(names, ", "))
	}
	return errors.New(msg)
}

// fieldValue reads v as JSON unless the declared field is a string.
func fieldValue(t *schema.Type, key, v string) any {
	if t != nil {
		if fd := t.Field(key); fd != nil && fd.Type.Kind == schema.TString {
			return v
		}
	}
	if x, err := decodeExact([]byte(v)); err == nil {
		return x
	}
	return v
}
