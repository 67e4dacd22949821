package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
)

// host is a host the engine's tests walk on. "local" is this process and
// a run directory (package engine/local); "memory" is engine/enginetest:
// the test's own driver and commands as scripted leaves, tasks one after
// another in index order, a fake clock, facts in memory. A test of what
// the walker decides — values, outcomes, failures, loops, guards, budgets,
// asks — runs on both and asserts the same on each (docs/decisions.md,
// "The local host leaves package engine").
type host struct {
	name string
	// walk walks p to its end with cfg (the local host's wiring; the
	// in-memory host takes its Drivers, Commands and WorkDir) and opts,
	// returning how it ended and its
	// facts; an error means the run could not start.
	walk func(ctx context.Context, t *testing.T, p *flows.Plan, cfg local.Config, opts Options) (*Result, []*record.Fact, error)
	// resume continues the run that walk ended as first, with facts, to
	// its end, returning how it ended and its facts, both attempts'.
	resume func(ctx context.Context, t *testing.T, p *flows.Plan, first *Result, facts []*record.Fact, cfg local.Config, opts Options) (*Result, []*record.Fact, error)
	// now is the host's clock as a walk starts: a time no fact of the
	// walk is before.
	now func() time.Time
	// runtime is a fresh Runtime of the host's, for a test that makes a
	// host of its own parts.
	runtime func() Runtime
}

var hosts = []host{
	{"local", walkLocal, resumeLocal, time.Now, func() Runtime { return local.Runtime{} }},
	{"memory", walkInMemory, resumeInMemory, func() time.Time { return enginetest.Epoch }, func() Runtime { return enginetest.New() }},
}

// onHosts runs test on every host, each a subtest of its own.
func onHosts(t *testing.T, test func(t *testing.T, h host)) {
	for _, h := range hosts {
		t.Run(h.name, func(t *testing.T) { test(t, h) })
	}
}

func walkLocal(ctx context.Context, t *testing.T, p *flows.Plan, cfg local.Config, opts Options) (*Result, []*record.Fact, error) {
	t.Helper()
	if cfg.RunsDir == "" {
		cfg.RunsDir = t.TempDir()
	}
	res, err := local.Execute(ctx, p, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return res, facts, nil
}

// resumeLocal is local.Resume of the run directory.
func resumeLocal(ctx context.Context, t *testing.T, _ *flows.Plan, first *Result, _ []*record.Fact, cfg local.Config, opts Options) (*Result, []*record.Fact, error) {
	t.Helper()
	res, err := local.Resume(ctx, first.Dir, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}}, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return res, facts, nil
}

// resumeInMemory walks the plan again on a fresh in-memory host with the
// first attempt's facts, as a workflow resumes a run.
func resumeInMemory(ctx context.Context, t *testing.T, p *flows.Plan, first *Result, facts []*record.Fact, cfg local.Config, opts Options) (*Result, []*record.Fact, error) {
	t.Helper()
	opts.RunID = first.RunID
	res, more, err := walkInMemoryAfter(ctx, t, p, cfg, opts, facts)
	return res, append(slices.Clone(facts), more...), err
}

func walkInMemory(ctx context.Context, t *testing.T, p *flows.Plan, cfg local.Config, opts Options) (*Result, []*record.Fact, error) {
	t.Helper()
	if opts.RunID == "" {
		opts.RunID = "r1"
	}
	return walkInMemoryAfter(ctx, t, p, cfg, opts, nil)
}

func walkInMemoryAfter(ctx context.Context, t *testing.T, p *flows.Plan, cfg local.Config, opts Options, earlier []*record.Fact) (*Result, []*record.Fact, error) {
	t.Helper()
	if cfg.WorkDir == "" { // as the local host takes it
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		cfg.WorkDir = wd
	}
	h := memoryHost{Host: enginetest.New(), drivers: cfg.Drivers, commands: cfg.Commands}
	res, err := Walk(ctx, p, opts, h, earlier)
	if err != nil {
		return nil, nil, err
	}
	walked.Store(res, h)
	return res, h.Facts(), nil
}

// walked holds the in-memory host each walk ended on, by its Result.
var walked sync.Map

// valuesOf are the node values the run that ended as res left, as a
// sweep reads them back: values.json locally, the host's values through
// JSON in memory.
func valuesOf(t *testing.T, res *Result) map[string]any {
	t.Helper()
	h, ok := walked.Load(res)
	if !ok {
		v, err := rundir.ReadValues(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	b, err := json.Marshal(h.(memoryHost).Values())
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// memoryHost is the in-memory host whose leaves are a test's driver and
// commands, handed the walk's ctx (a stop or a fail_fast sibling reaches
// them as it does locally). Each turn takes turnTime on the host's fake
// clock, so that visits have wall times as they do locally.
type memoryHost struct {
	*enginetest.Host
	drivers  map[string]Driver
	commands Commander
}

func (m memoryHost) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	d := m.drivers[t.Agent.Driver]
	if d == nil {
		return nil, fmt.Errorf("%w: no driver %q in the test", ErrUnavailable, t.Agent.Driver)
	}
	_ = m.Sleep(ctx, turnTime) // a stopped turn still answers, as a driver does
	return d.Turn(ctx, t)
}

const turnTime = 10 * time.Millisecond

func (m memoryHost) Command(ctx context.Context, c *Command) (*CommandResult, error) {
	if m.commands == nil {
		return m.Host.Command(ctx, c)
	}
	return m.commands.Run(ctx, c)
}

// executeOn is execute on host h.
func executeOn(t *testing.T, h host, p *flows.Plan, d *fakeDriver, opts Options) (*Result, []*record.Fact) {
	t.Helper()
	cfg := local.Config{Drivers: map[string]Driver{"exec": d}, Commands: fakeCommands{}}
	opts.Backoff = time.Millisecond
	res, facts, err := h.walk(context.Background(), t, p, cfg, opts)
	if err != nil {
		t.Fatalf("execute on %s: %v", h.name, err)
	}
	return res, facts
}
