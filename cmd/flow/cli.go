package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/internal/sandbox"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/steps/drivers"
)

// Exit codes (README.md, Commands).
const (
	exitOK          = 0
	exitFailed      = 1
	exitInvalid     = 2
	exitInterrupted = 130
)

// exitError carries an exit code up through cobra.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &exitError{code: exitInvalid, msg: fmt.Sprintf(format, args...)}
}

// Main runs the command line and returns the exit code. Everything it
// prints passes a redactor (package secret) that learns the secrets as the
// configuration and the flow are read, and its errors are shown with
// control characters escaped (safeText).
func Main(args []string) int {
	if len(args) > 0 && args[0] == sandbox.HelperArg { // flow as its own sandbox's helper
		err := sandbox.Exec(args[1:])
		fmt.Fprintln(os.Stderr, "flow: sandbox:", err)
		return 126
	}
	sandbox.SetHelper(sandbox.Helper())
	stdout, stderr := (*secret.Redactor)(nil).Writer(os.Stdout), (*secret.Redactor)(nil).Writer(os.Stderr)
	defer func() { _ = stdout.Flush(); _ = stderr.Flush() }()
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, safeText(ee.msg))
		}
		return ee.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "flow: %s\nRun '%s --help' for usage.\n", safeText(err.Error()), ue.cmd.CommandPath())
		return exitInvalid
	}
	fmt.Fprintf(stderr, "flow: %s\n", safeText(err.Error()))
	return exitFailed
}

// usageError is a command-line error: an unknown command or flag, a flag
// value that does not parse, the wrong number of arguments. It is typed
// where cobra reports it (the flag error function, the argument checks), so
// that Main exits 2 for it without reading cobra's messages.
type usageError struct {
	cmd *cobra.Command // whose command line is wrong, for its --help
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// typeUsageErrors makes the flag and argument errors of cmd and of every
// command under it usage errors. It wraps each command's Args in place, so
// a subcommand declares cobra's checks (cobra.ExactArgs, …) as usual; it is
// called once the tree is built.
func typeUsageErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{cmd: c, err: err} })
	var wrap func(*cobra.Command)
	wrap = func(c *cobra.Command) {
		if check := c.Args; check != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := check(cmd, args); err != nil {
					return &usageError{cmd: cmd, err: err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(cmd)
}

// unknownCommand is the root's argument check: the root takes no arguments,
// so one is a command flow does not have. (Left to itself, cobra checks this
// while finding the command, with an error that cannot be told from others.)
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
		for i, name := range near {
			near[i] = strconv.Quote(name)
		}
		msg += "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return errors.New(msg)
}

// app is what every subcommand shares: configuration and output streams.
type app struct {
	cfg     *viper.Viper
	drivers *drivers.Registry // the agent drivers this build provides
	stdout  io.Writer
	stderr  io.Writer
	profile *os.File
	// secrets are the secrets known so far (learn): the redacting writers
	// among stdout and stderr redact them, and runs are given them.
	secrets  *secret.Redactor
	redacted []*secret.Writer
	warned   map[string]bool // the variables whose values cannot be redacted, warned of
	root     *runner.Runner  // the composition root (runner), once built
}

// learn adds values to the secrets that nothing printed may show. A value
// too short or too common to redact safely (secret.Unsafe) is left out,
// with a warning, once, that names the variable, never the value.
func (a *app) learn(values ...secret.Named) {
	var safe []string
	for _, v := range values {
		if v.Value == "" {
			continue
		}
		why := secret.Unsafe(v.Value)
		if why == "" {
			safe = append(safe, v.Value)
			continue
		}
		if a.warned == nil {
			a.warned = map[string]bool{}
		}
		if !a.warned[v.Name] {
			a.warned[v.Name] = true
			fmt.Fprintf(a.stderr, "flow: warning: %s is not redacted from what flow writes: its value is %s, which would be found in ordinary text and in flow's own; use a longer secret\n", v.Name, why)
		}
	}
	a.secrets = a.secrets.With(safe...)
	for _, w := range a.redacted {
		w.SetRedactor(a.secrets)
	}
}

// startProfile starts a CPU profile for --cpuprofile (for measuring flow
// itself; see docs/performance.md).
func (a *app) startProfile(cmd *cobra.Command) error {
	path, _ := cmd.Flags().GetString("cpuprofile")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return invalid("--cpuprofile: %v", err)
	}
	a.profile = f
	return pprof.StartCPUProfile(f)
}

func (a *app) stopProfile() {
	if a.profile != nil {
		pprof.StopCPUProfile()
		_ = a.profile.Close()
		a.profile = nil
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	a := &app{cfg: viper.New(), drivers: registry(), stdout: stdout, stderr: stderr}
	for _, w := range []io.Writer{stdout, stderr} {
		if sw, ok := w.(*secret.Writer); ok {
			a.redacted = append(a.redacted, sw)
		}
	}
	// Secrets in the environment are known before anything is read.
	a.learn(secret.NamedFromEnviron(os.Environ())...)
	root := &cobra.Command{
		Use:           "flow",
		Short:         "Run declarative YAML flows over coding-agent subagents",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable, and with an argument check of its own, the root reports
		// an unknown command through unknownCommand; run bare, it shows help.
		Args:                       unknownCommand,
		RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SuggestionsMinimumDistance: 2,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Name() != "serve" && cmd.Name() != "worker" {
				// Orphans of steps come to this short-lived process, which
				// ends them at the run's end without a /proc scan.
				proc.Subreap()
			}
			if err := a.startProfile(cmd); err != nil {
				return err
			}
			return a.loadConfig(cmd)
		},
		PersistentPostRun: func(*cobra.Command, []string) { a.stopProfile() },
		Version:           version(),
	}
	root.SetVersionTemplate("flow {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.AddCommand(a.mcpDelegateCmd()) // hidden: Claude Code and Codex start it
	// --project-agents is a flag of the commands that resolve agents only:
	// on flow show or flow gc it would do nothing.
	for _, c := range []*cobra.Command{a.runCmd(), a.validateCmd(), a.planCmd(), a.agentsCmd(), a.testCmd(), a.resumeCmd(),
		a.serveCmd(), a.sweepCmd(), a.pinCmd(), a.gateCmd(), a.forkCmd()} {
		c.Flags().Bool("project-agents", false, "load the repository's own agents (.flow/agents, .pi/agents, .claude/agents)")
		root.AddCommand(c)
	}
	root.AddCommand(a.schemaCmd(), a.runsCmd(), a.showCmd(), a.tailCmd(), a.gcCmd(), a.workerCmd(), a.delegateCmd(), a.diffCmd(), a.signalCmd())
	// cobra adds these when it executes; added now, their arguments are
	// checked as every other command's.
	addExamples(root)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	typeUsageErrors(root)
	return root
}

// loadConfig resolves the configuration (docs/drivers.md, Configuration): flags > FLOW_*
// environment variables > .flow/config.yaml > ~/.config/flow/config.yaml >
// defaults. Flow files are never read through viper: it loses positions.
func (a *app) loadConfig(cmd *cobra.Command) error {
	v := a.cfg
	v.SetDefault("driver", flows.DefaultDriver)
	v.SetDefault("runs_dir", filepath.Join(".flow", "runs"))
	v.SetDefault("sweeps_dir", filepath.Join(".flow", "sweeps"))
	v.SetDefault("gates_dir", filepath.Join(".flow", "gates")) // flow gate's trials: sweeps of their own
	v.SetDefault("tests_dir", filepath.Join(".flow", "tests")) // flow test's runs, apart from runs_dir
	v.SetDefault("concurrency", 0)
	v.SetDefault("timeout", "30m") // a turn that nothing else bounds
	v.SetDefault("project_agents", false)
	// What reading one flow or agent file may cost (schema.Limits).
	v.SetDefault("limits.file_bytes", schema.DefaultFileBytes)
	v.SetDefault("limits.depth", schema.DefaultDepth)
	v.SetDefault("limits.nodes", schema.DefaultNodes)
	v.SetDefault("limits.prompt_bytes", schema.DefaultPromptBytes) // what one turn is sent
	v.SetEnvPrefix("FLOW")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	v.SetConfigType("yaml")
	var files []string
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".config", "flow", "config.yaml"))
	}
	files = append(files, filepath.Join(".flow", "config.yaml"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		err = v.MergeConfig(fh)
		_ = fh.Close()
		if err != nil {
			return invalid("reading configuration %s: %v", f, err)
		}
	}
	if err := applyRateLimit(v); err != nil {
		return err
	}
	if f := cmd.Flags().Lookup("project-agents"); f != nil {
		if err := v.BindPFlag("project_agents", f); err != nil {
			return fmt.Errorf("binding flags: %w", err)
		}
	}
	a.learn(configSecrets(v, a.drivers)...)
	return nil
}

// configSecrets are the secrets the configuration knows of: the values of
// keys whose names say they hold one, and of the environment variables
// that keys ending in _env name (drivers.<name>.api_key_env) — the keys in
// the files and every driver's keys, which may be set in the environment
// only (FLOW_DRIVERS_<NAME>_<KEY>).
func configSecrets(v *viper.Viper, drivers *drivers.Registry) []secret.Named {
	keys := v.AllKeys()
	for _, s := range drivers.Specs() {
		for _, k := range s.Keys {
			keys = append(keys, "drivers."+s.Name+"."+k)
		}
	}
	var out []secret.Named
	for _, k := range keys {
		if !v.IsSet(k) {
			continue
		}
		val := v.GetString(k)
		switch {
		case val == "":
		case strings.HasSuffix(strings.ToLower(k), "_env"):
			out = append(out, secret.Named{Name: val, Value: os.Getenv(val)})
		case secretKey(k):
			out = append(out, secret.Named{Name: k, Value: val})
		}
	}
	return out
}

// secretKey reports whether a configuration key's name says it holds a
// secret; such keys are also left out of the snapshot.
func secretKey(k string) bool {
	lk := strings.ToLower(k)
	return strings.Contains(lk, "key") && !strings.HasSuffix(lk, "_env") || strings.Contains(lk, "token") ||
		strings.Contains(lk, "secret") || strings.Contains(lk, "password") || secret.IsSecretName(k)
}

// loadOptions are the flows.Options the configuration implies.
func (a *app) loadOptions() flows.Options {
	return flows.Options{Disk: osdisk.OS, ProjectAgents: a.cfg.GetBool("project_agents"), DefaultDriver: a.cfg.GetString("driver"),
		Drivers: a.drivers.Names(), DriverTools: a.drivers.Tools(), Limits: schema.Limits{
			FileBytes: a.cfg.GetInt("limits.file_bytes"), Depth: a.cfg.GetInt("limits.depth"), Nodes: a.cfg.GetInt("limits.nodes"),
			PromptBytes: a.cfg.GetInt("limits.prompt_bytes"),
		}}
}

// runSettings are the run-wide overrides of model and timeout (docs/flow-files.md, agent):
// the command line's, and the configuration's bound on a turn.
func (a *app) runSettings(model string, timeout time.Duration) flows.Settings {
	return flows.Settings{Model: model, Timeout: timeout, TurnTimeout: a.cfg.GetDuration("timeout")}
}

// config is the resolved configuration for the snapshot, without secrets:
// keys whose name says they hold one are left out.
func (a *app) config() map[string]any {
	out := map[string]any{}
	for _, k := range a.cfg.AllKeys() {
		if secretKey(k) {
			continue
		}
		out[k] = a.cfg.Get(k)
	}
	return out
}
