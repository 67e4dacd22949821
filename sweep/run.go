package sweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
)

// RunOptions configure running a sweep's cells.
type RunOptions struct {
	// Engine is the walker's settings every cell's run shares: the
	// configuration, Concurrency (the cap on live agent turns, held across
	// all cells at once). RunID, Input, Settings and Live are set per
	// cell; cells run unattended (no Asker).
	Engine engine.Options
	// Host is the wiring every cell's host shares: WorkDir, where the
	// cells work (default the current directory), and the leaves where
	// the Backend gives none (a Runner's gives the process's drivers and
	// command runner). Its RunsDir is the sweep's cells directory, set
	// per cell: Run refuses one given here.
	Host runner.Host
	// Settings are the run-wide settings before a cell's assignment
	// (Sweep.Settings).
	Settings flows.Settings
	// Load says where agents come from, to resume a cell that was cut off
	// from its snapshot.
	Load flows.Options
	// History is what forecasts learn from; cells add to it as they end.
	// nil means an empty one.
	History *History
	// OnCell is told when a cell starts, ends or is skipped. Calls are
	// serialized.
	OnCell func(CellEvent)
	// Backend walks each cell's run; nil is runner.Local of Load. A
	// runner.Temporal walks each as a run workflow on Temporal's workers
	// and mirrors it into the cell's run directory (flow sweep
	// --temporal), so the sweep reads every cell the same way wherever it
	// ran. The cap on live turns across cells (Engine.Concurrency) holds
	// for runs walked in this process; elsewhere each run caps its own.
	Backend runner.Backend
	// OneSample leaves a cell's repeat out of its visit keys, so every
	// repeat is answered by the same recording (a gate over cassettes,
	// flow gate --cassette): without it, repeats are distinct samples.
	OneSample bool
}

// CellEvent tells of one cell: it started (Started), or ended, stopped or
// was skipped (Cell.Status says which).
type CellEvent struct {
	Cell    Cell
	Started bool
	// Waiting, when set, says the cell's run waits for its provider's
	// rate limit: "waiting 12 s for api.openai.com (rate limit)".
	Waiting  string
	Forecast Forecast
	Of       int // how many cells the sweep has
}

// run is one Run in progress.
type run struct {
	s        *Sweep
	plan     *flows.Plan
	opts     RunOptions
	live     engine.Semaphore
	assigned map[string]Assignment

	// Guarded by s.mu.
	reserved  Budget // the expected spending of the cells running now
	forecasts map[string]Forecast
	unpriced  int        // running cells whose forecast the budget could not price
	ended     *sync.Cond // on s.mu: a cell ended

	limitBase map[ratelimit.Key]ratelimit.Stats // the limiters as the run started

	notifyMu sync.Mutex // serializes OnCell
	errMu    sync.Mutex
	fileErr  error // the first error writing the sweep's files
}

// Run runs every cell that has not ended — pending, skipped, stopped, or
// cut off while running (resumed from its run directory, so that nothing
// it did is run or paid for twice) — model-major, Concurrency cells at a
// time, and rewrites the reports after each. Cancelling ctx with
// engine.ErrStopped stops running cells cleanly (they end stopped) and
// starts no more. The error is about the sweep's own files; a cell that
// fails is an outcome, not an error.
func (s *Sweep) Run(ctx context.Context, plan *flows.Plan, opts RunOptions) error {
	if opts.History == nil {
		opts.History = NewHistory(plan.Root.Name)
	}
	if opts.Backend == nil {
		opts.Backend = runner.Local{Load: opts.Load}
	}
	if opts.Host.RunsDir != "" {
		return fmt.Errorf("sweep: RunOptions.Host gives RunsDir %s: a cell's run directory is in the sweep's cells directory", opts.Host.RunsDir)
	}
	r := &run{s: s, plan: plan, opts: opts, live: runner.LiveCap(plan.Concurrency(opts.Engine.Concurrency)), assigned: map[string]Assignment{}, forecasts: map[string]Forecast{},
		ended: sync.NewCond(&s.mu)}
	defer context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		r.ended.Broadcast() // waiting cells see the sweep stopped
	})()
	r.limitBase = map[ratelimit.Key]ratelimit.Stats{}
	for _, st := range ratelimit.Default.Stats() {
		r.limitBase[st.Key] = st
	}
	s.mu.Lock()
	for _, a := range s.f.Assignments {
		r.assigned[a.Label] = a
	}
	var todo []*Cell
	for _, c := range s.f.Cells {
		if !c.Status.Ended() {
			todo = append(todo, c)
		}
	}
	workers := s.f.Concurrency
	s.mu.Unlock()

	p := pool.New().WithMaxGoroutines(max(workers, 1))
	for _, c := range todo {
		if ctx.Err() != nil {
			break
		}
		p.Go(func() { r.cell(ctx, c) })
	}
	p.Wait()
	return errors.Join(r.fileErr, s.WriteReports())
}

// Forecasts forecasts one run of each assignment from h, by label, as a
// sweep does before starting one.
func Forecasts(plan *flows.Plan, as []Assignment, base flows.Settings, h *History) map[string]Forecast {
	out := map[string]Forecast{}
	for _, a := range as {
		out[a.Label] = h.Forecast(flows.Estimate(plan, a.Settings(base)))
	}
	return out
}

// forecast is the forecast of one run of assignment a, made again after
// each cell ends; s.mu is held.
func (r *run) forecast(a Assignment) Forecast {
	if fc, ok := r.forecasts[a.Label]; ok {
		return fc
	}
	fc := r.opts.History.Forecast(flows.Estimate(r.plan, a.Settings(r.opts.Settings)))
	r.forecasts[a.Label] = fc
	return fc
}

// cell runs one cell, unless the budget cannot cover it. Under a budget,
// a cell that nothing priced (its forecast is unknown) waits while
// another such cell runs: the one running prices it when it ends
// (docs/sweeps.md).
func (r *run) cell(ctx context.Context, c *Cell) {
	if ctx.Err() != nil {
		return
	}
	s := r.s
	a := r.assigned[c.Assignment]
	s.mu.Lock()
	fc := r.forecast(a)
	for s.f.Budget.unpriced(fc) && r.unpriced > 0 && ctx.Err() == nil {
		r.ended.Wait()
		fc = r.forecast(a)
	}
	if ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	unpriced := s.f.Budget.unpriced(fc)
	if why := s.f.Budget.refuse(fc, s.spentLocked(), r.reserved); why != "" {
		c.Status, c.Note = StatusSkipped, why
		r.saved(s.saveLocked())
		ev := CellEvent{Cell: *c, Forecast: fc, Of: len(s.f.Cells)}
		s.mu.Unlock()
		r.notify(ev)
		return
	}
	reserve := fc.expected()
	r.reserved.add(reserve)
	if unpriced {
		r.unpriced++
	}
	c.Unpriced = unpriced
	if reserve != (Budget{}) {
		c.Reserved = &reserve
	}
	if c.Run == "" {
		c.Run = rundir.NewRunID(time.Now())
	}
	setAside := setAside(c)
	c.Status, c.Note = StatusRunning, ""
	r.saved(s.saveLocked())
	ev := CellEvent{Cell: *c, Started: true, Forecast: fc, Of: len(s.f.Cells)}
	s.mu.Unlock()
	r.notify(ev)

	var o *Outcome
	var facts []*record.Fact
	if setAside {
		o, facts = r.rerun(ctx, c, a) // its run ended failed: resume it
	} else {
		o, facts = r.execute(ctx, c, a)
	}
	for infrastructure(o) && c.Reruns < MaxReruns && ctx.Err() == nil {
		o, facts = r.rerun(ctx, c, a)
	}

	s.mu.Lock()
	r.limitsLocked()
	r.reserved.add(Budget{Tokens: -reserve.Tokens, Cost: -reserve.Cost})
	if unpriced {
		r.unpriced--
	}
	r.ended.Broadcast() // waiters take s.mu once the outcome below is recorded
	if o.Status == record.StatusRunning {
		c.Note = o.Message // left running: it is not this sweep's to record
		ev = CellEvent{Cell: *c, Forecast: fc, Of: len(s.f.Cells)}
		s.mu.Unlock()
		r.notify(ev)
		return
	}
	c.Outcome = o
	switch {
	case quota(o):
		c.Status, c.Note = StatusQuota, o.Message
	case infrastructure(o):
		c.Status, c.Note = StatusSkipped, fmt.Sprintf("still %s after %d re-runs, not scored: %s", o.Failure, c.Reruns, o.Message)
	case o.Status == record.StatusSucceeded || o.Status == record.StatusFailed:
		c.Status = StatusFailed
		if o.Success {
			c.Status = StatusSucceeded
		}
		if facts != nil {
			r.opts.History.Add(facts)
			clear(r.forecasts)
		}
	default:
		c.Status = StatusStopped
	}
	r.saved(s.saveLocked())
	ev = CellEvent{Cell: *c, Forecast: fc, Of: len(s.f.Cells)}
	s.mu.Unlock()
	r.saved(s.WriteReports())
	r.notify(ev)
}

// execute runs (or resumes, or only reads) the cell's run and returns its
// outcome, with its facts when it ended.
func (r *run) execute(ctx context.Context, c *Cell, a Assignment) (*Outcome, []*record.Fact) {
	cells := filepath.Join(r.s.dir, cellsDir)
	eo, host := r.opts.Engine, r.opts.Host
	host.RunsDir, eo.RunID, eo.Input, eo.Settings, eo.Live, eo.Asker = cells, c.Run, c.Input, a.Settings(r.opts.Settings), r.live, nil
	eo.OnEvent = r.waits(c, eo.OnEvent)
	if !r.opts.OneSample {
		eo.Repeat = c.Repeat // repeats are distinct samples: part of every visit key
	}
	dir := filepath.Join(cells, c.Run)
	var err error
	info, ierr := rundir.Inspect(dir)
	switch {
	case ierr == nil && (info.Status == record.StatusSucceeded || info.Status == record.StatusFailed):
		// It ended before the sweep could record it.
	case ierr == nil && info.Status == record.StatusRunning:
		// Another process (another resume of this sweep) holds its lock.
		return &Outcome{Status: record.StatusRunning, Message: "its run is held by another process: " + info.Why}, nil
	case ierr == nil && info.Resumable:
		_, err = r.opts.Backend.Resume(ctx, dir, host, eo)
	case ierr == nil:
		err = fmt.Errorf("run %s cannot be resumed: %s", c.Run, info.Why)
	case startedElsewhere(dir):
		// Its walk started on Temporal before the first fact came back:
		// follow it there rather than start the cell a second time.
		_, err = r.opts.Backend.Resume(ctx, dir, host, eo)
	default:
		if _, serr := os.Stat(dir); !errors.Is(serr, fs.ErrNotExist) {
			// Cut off as its directory was made: start afresh beside it.
			r.s.mu.Lock()
			c.Run = rundir.NewRunID(time.Now())
			r.saved(r.s.saveLocked())
			r.s.mu.Unlock()
			eo.RunID, dir = c.Run, filepath.Join(cells, c.Run)
		}
		_, err = r.opts.Backend.Start(ctx, r.plan, host, eo)
	}
	o, info, rerr := readOutcome(dir, scoreOf(r.plan))
	if rerr != nil {
		if err == nil {
			err = rerr
		}
		if ctx.Err() != nil {
			return &Outcome{Status: record.StatusStopped, Message: err.Error()}, nil
		}
		// The run could not start: the cell failed as a refused run.
		return &Outcome{Status: record.StatusFailed, Failure: string(schema.FailRefused), Message: err.Error()}, nil
	}
	if o.Status == record.StatusSucceeded || o.Status == record.StatusFailed {
		return o, info.Facts
	}
	return o, nil
}

// startedElsewhere says whether the run directory dir, which has no run
// to read yet, records a walk that started on Temporal.
func startedElsewhere(dir string) bool {
	snap, err := rundir.ReadSnapshot(dir)
	return err == nil && snap.Temporal != nil
}

func scoreOf(p *flows.Plan) *flows.Score {
	if p.Root.Sweep == nil {
		return nil
	}
	return p.Root.Sweep.Score
}

// saved keeps the first error writing the sweep's files; s.mu or not.
func (r *run) saved(err error) {
	if err == nil {
		return
	}
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.fileErr == nil {
		r.fileErr = err
	}
}

func (r *run) notify(ev CellEvent) {
	if r.opts.OnCell == nil {
		return
	}
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	r.opts.OnCell(ev)
}

// spentLocked is what the sweep's cells have spent, stopped ones
// included; s.mu is held.
func (s *Sweep) spentLocked() Budget {
	var b Budget
	for _, c := range s.f.Cells {
		if c.Outcome != nil {
			b.Tokens += c.Outcome.Usage.Tokens()
			if c.Outcome.Usage.Cost != nil {
				b.Cost += *c.Outcome.Usage.Cost
			}
		}
	}
	return b
}

func (b *Budget) add(o Budget) {
	b.Tokens += o.Tokens
	b.Cost += o.Cost
}

// expected is what a forecast reserves of the budget while its cell runs:
// the expected spending, where known.
func (fc Forecast) expected() Budget {
	var b Budget
	if fc.Tokens.Known {
		b.Tokens = int64(fc.Tokens.Expected + 0.5)
	}
	if fc.Cost.Known {
		b.Cost = fc.Cost.Expected
	}
	return b
}

// unpriced says whether b bounds something fc does not forecast.
func (b Budget) unpriced(fc Forecast) bool {
	return b.Tokens > 0 && !fc.Tokens.Known || b.Cost > 0 && !fc.Cost.Known
}

// refuse says why a cell with forecast fc must not start, when the
// budget's left-over (after spent, and reserved for running cells) cannot
// cover its expected spending; a cell whose forecast is unknown starts
// while anything is left.
func (b Budget) refuse(fc Forecast, spent, reserved Budget) string {
	if b.Cost > 0 {
		left := b.Cost - spent.Cost - reserved.Cost
		switch {
		case fc.Cost.Known && fc.Cost.Expected > left:
			return fmt.Sprintf("budget: its forecast cost $%.4f is more than the $%.4f left of $%.4f", fc.Cost.Expected, max(left, 0), b.Cost)
		case !fc.Cost.Known && left <= 0:
			return fmt.Sprintf("budget: nothing is left of $%.4f", b.Cost)
		}
	}
	if b.Tokens > 0 {
		left := b.Tokens - spent.Tokens - reserved.Tokens
		switch {
		case fc.Tokens.Known && int64(fc.Tokens.Expected+0.5) > left:
			return fmt.Sprintf("budget: its forecast of %.0f tokens is more than the %d left of %d", fc.Tokens.Expected, max(left, 0), b.Tokens)
		case !fc.Tokens.Known && left <= 0:
			return fmt.Sprintf("budget: nothing is left of %d tokens", b.Tokens)
		}
	}
	return ""
}
