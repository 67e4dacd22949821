package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/steps/drivers"
	"github.com/flowrun/flow/steps/run"
)

// Config is what a process's runs are built from: the configuration as
// the command line resolved it. Nothing in it is about one run.
type Config struct {
	// Registry is the drivers this build provides; Drivers is
	// drivers.<name>.<key> of the configuration, by driver.
	Registry *drivers.Registry
	Drivers  map[string]drivers.Config
	// Load says which drivers exist and where agents come from (what a
	// resumed run's snapshot loads with).
	Load flows.Options
	// Concurrency caps the live agent turns of each run (0: the flow's).
	Concurrency int
	// TurnTimeout bounds a turn that nothing else bounds (timeout).
	TurnTimeout time.Duration
	// Snapshot is the resolved configuration, without secrets, that each
	// run records.
	Snapshot map[string]any
	// Secrets are the secrets the process has learned so far, from the
	// configuration and the environment (redacted from what the command
	// prints too); read as each run starts, so a secret learned while the
	// flow loaded counts.
	Secrets func() *secret.Redactor
	// Warn says what does not change a run's outcome (traces that could
	// not be sent); nil says nothing.
	Warn func(msg string)
}

// Runner is the composition root (docs/architecture.md): built once per
// process from its Config, it holds the drivers, the command runner, the
// secrets, the preflight, tracing, the rate limiters the drivers share,
// the delegation server and reuse, and hands out the backends every
// entry point gets its runs from — flow run, resume, test, every cell of
// a sweep, every run flow serve starts, and both ends of Temporal. A
// cross-cutting concern is added here, once.
type Runner struct {
	cfg      Config
	drivers  map[string]engine.Driver
	commands engine.Commander

	mu          sync.Mutex
	preflighted map[*flows.Plan]bool // plans whose drivers passed preflight
}

// New builds the process's drivers (each once: their rate limiters,
// connections and sessions are the process's) and its command runner.
// A driver configured wrong is an error.
func New(cfg Config) (*Runner, error) {
	if cfg.Registry == nil {
		cfg.Registry = &drivers.Registry{}
	}
	if cfg.Secrets == nil {
		cfg.Secrets = func() *secret.Redactor { return nil }
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	ds, err := cfg.Registry.Build(cfg.Drivers)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, drivers: ds, commands: run.New(), preflighted: map[*flows.Plan]bool{}}, nil
}

// Limits are the rate limiters every driver of the process shares.
func (r *Runner) Limits() *ratelimit.Registry { return ratelimit.Default }

// Secrets are the secrets runs of this process redact.
func (r *Runner) Secrets() *secret.Redactor { return r.cfg.Secrets() }

// Local is the backend that walks runs in this process, with every
// concern of the runner. opts say how its runs' leaves are answered
// (Reuse, Replay, Dry); without, by the drivers.
func (r *Runner) Local(opts ...LeafOption) Backend {
	return &hosted{r: r, inner: Local{Load: r.cfg.Load}, local: true, leaves: leafOptions(opts)}
}

// Preflight checks every driver plan's agents use (drivers.Registry.
// Preflight), once per plan in this process: a missing CLI, a server
// that takes no connections or an unset key is a *drivers.PreflightError
// before anything of the run is made. It returns the checks.
func (r *Runner) Preflight(ctx context.Context, plan *flows.Plan) ([]drivers.Check, error) {
	checks, err := r.cfg.Registry.Preflight(ctx, r.cfg.Drivers, drivers.Agents(plan))
	if err == nil {
		r.mu.Lock()
		r.preflighted[plan] = true
		r.mu.Unlock()
	}
	return checks, err
}

// preflight is Preflight unless plan passed it already.
func (r *Runner) preflight(ctx context.Context, plan *flows.Plan) error {
	r.mu.Lock()
	done := r.preflighted[plan]
	r.mu.Unlock()
	if done {
		return nil
	}
	_, err := r.Preflight(ctx, plan)
	return err
}

// fill gives host and opts, which carry one run's directories and input,
// what every run of the process shares: the drivers and the command
// runner (where host has none), the secrets, the concurrency, the
// configuration, the bound on a turn.
func (r *Runner) fill(host Host, opts engine.Options) (Host, engine.Options) {
	if host.Drivers == nil {
		host.Drivers = r.drivers
	}
	if host.Commands == nil {
		host.Commands = r.commands
	}
	opts.Secrets = slices.Concat(r.cfg.Secrets().Values(), opts.Secrets)
	if opts.Concurrency == 0 && opts.Live == nil {
		opts.Concurrency = r.cfg.Concurrency
	}
	if opts.Config == nil {
		opts.Config = r.cfg.Snapshot
	}
	if opts.Settings.TurnTimeout == 0 {
		opts.Settings.TurnTimeout = r.cfg.TurnTimeout
	}
	return host, opts
}

// warn says what does not change a run's outcome.
func (r *Runner) warn(format string, args ...any) {
	r.cfg.Warn(fmt.Sprintf(format, args...))
}

// Drivers are the process's drivers, by name, as New built them.
func (r *Runner) Drivers() map[string]engine.Driver { return r.drivers }
