package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/sweep"
	"github.com/flowrun/flow/sweep/gate"
)

// gateBaseline opens the baseline of a gate in baseline mode: the
// counts of the sweep's recorded runs (--reuse), or a sweep of its own
// that samples the baseline's flow and assignment beside the candidate.
func (a *app) gateBaseline(plan *flows.Plan, f gateFlags, tasks []sweep.Task, cfg sweep.Config) (*gate.Baseline, error) {
	if f.baseline == "" {
		return nil, nil
	}
	dir, ok := a.findBaseline(f.baseline)
	if !ok {
		return nil, invalid("--baseline %s: no sweep there, nor in %s (give a sweep id, its directory, or a directory of sweeps)", f.baseline, a.sweepsDir())
	}
	bs, err := sweep.Open(dir)
	if err != nil {
		return nil, invalid("--baseline: %v", err)
	}
	var ids []string
	if f.reuse {
		for _, t := range tasks {
			ids = append(ids, t.ID)
		}
	}
	b, as, err := gate.OpenBaseline(bs, f.assignment, ids)
	if err != nil {
		return nil, invalid("--baseline: %v", err)
	}
	if f.reuse {
		return b, nil
	}
	// Fresh samples: the baseline sweep's copy of its flow, on its
	// assignment, over the gate's tasks.
	bplan, notes, diags := bs.LoadPlan(a.loadOptions())
	a.printDiagnostics(diags)
	if diags.HasErrors() {
		return nil, invalid("--baseline: the flow of sweep %s does not load", bs.ID())
	}
	for _, n := range notes {
		fmt.Fprintln(a.stderr, "note: baseline: "+n)
	}
	bcfg := cfg
	bcfg.Spec.Models, bcfg.Spec.Assign = nil, nil
	if as.Model != "" {
		bcfg.Spec.Models = []string{as.Model}
	}
	for agent, m := range as.Agents {
		bcfg.Spec.Assign = append(bcfg.Spec.Assign, flows.Assign{Agent: agent, Models: []string{m}})
	}
	if err := sweep.Check(bplan, bcfg); err != nil {
		return nil, invalid("--baseline: %v", err)
	}
	fs, err := sweep.Create(a.gatesDir(), bplan, bcfg)
	if err != nil {
		return nil, err
	}
	b.Fresh = &gate.Runs{Sweep: fs, Plan: bplan}
	b.Recorded = nil
	return b, nil
}

// findBaseline resolves --baseline: a sweep id or directory, or a
// directory of sweeps (a CI artifact), whose newest sweep it takes.
func (a *app) findBaseline(name string) (string, bool) {
	if dir, ok := sweep.Find(a.sweepsDir(), name); ok {
		return dir, true
	}
	dirs, err := sweep.CellsDirs(name)
	if err != nil || len(dirs) == 0 {
		return "", false
	}
	return filepath.Dir(dirs[0]), true
}

// anySweep says whether a --cassette names a sweep.
func (a *app) anySweep(names []string) bool {
	for _, n := range names {
		if _, ok := sweep.Find(a.sweepsDir(), n); ok {
			return true
		}
	}
	return false
}

// gateRunOptions are the run options both sides of a gate share: the
// runner's backend (what every run of the process gets), or with
// --cassette one whose leaves the recordings answer.
func (a *app) gateRunOptions(f gateFlags) (sweep.RunOptions, *reuse.Leaves, error) {
	wd, err := os.Getwd()
	if err != nil {
		return sweep.RunOptions{}, nil, err
	}
	backend, err := a.local()
	if err != nil {
		return sweep.RunOptions{}, nil, err
	}
	opts := sweep.RunOptions{Load: a.loadOptions(), OnCell: a.gateCell, Backend: backend}
	opts.Host.WorkDir, opts.Engine.Concurrency = wd, a.cfg.GetInt("concurrency")
	if len(f.cassettes) == 0 {
		return opts, nil, nil
	}
	var dirs []string
	for _, c := range f.cassettes {
		if sd, ok := sweep.Find(a.sweepsDir(), c); ok {
			s, err := sweep.Open(sd)
			if err != nil {
				return opts, nil, invalid("--cassette: %v", err)
			}
			for _, cell := range s.Snapshot().Cells {
				if cell.Run != "" && cell.Status.Ended() {
					dirs = append(dirs, filepath.Join(s.CellsDir(), cell.Run))
				}
			}
			continue
		}
		dir := a.recording(c)
		if !rundir.HasJournal(dir) {
			return opts, nil, invalid("--cassette %s: no cassette, run or sweep there; record one with flow test --record FILE", c)
		}
		dirs = append(dirs, dir)
	}
	set, err := reuse.Open(a.cfg.GetString("runs_dir"), dirs...)
	if err != nil {
		return opts, nil, invalid("--cassette: %v", err)
	}
	r, err := a.runner()
	if err != nil {
		return opts, nil, err
	}
	leaves := r.Replay(set, true) // a gate runs its commands for real
	if opts.Backend, err = a.local(runner.Answered(leaves)); err != nil {
		return opts, nil, err
	}
	opts.OneSample = true
	return opts, leaves, nil
}

// gateSide is the run options of one side of the gate: its sweep's
// settings, and a forecast from the flow's earlier runs, sweeps and
// gates.
func (a *app) gateSide(s *sweep.Sweep, plan *flows.Plan, opts sweep.RunOptions) (sweep.RunOptions, error) {
	sweeps, err := sweep.CellsDirs(a.sweepsDir())
	if err != nil {
		return opts, err
	}
	gates, err := sweep.CellsDirs(a.gatesDir())
	if err != nil {
		return opts, err
	}
	h, err := sweep.ReadHistory(plan.Root.Name, append(append([]string{a.cfg.GetString("runs_dir")}, sweeps...), gates...)...)
	if err != nil {
		return opts, err
	}
	opts.History, opts.Settings = h, s.Settings(a.cfg.GetDuration("timeout"))
	return opts, nil
}

// gateCell says of a trial only what a reader of the gate needs: a wait
// for a rate limit, a trial not scored or not started.
func (a *app) gateCell(ev sweep.CellEvent) {
	c := ev.Cell
	name := fmt.Sprintf("trial %s #%d", c.Task, c.Repeat)
	switch {
	case ev.Waiting != "":
		fmt.Fprintf(a.stderr, "%s: %s\n", name, ev.Waiting)
	case ev.Started:
	case c.Status == sweep.StatusSkipped && c.Outcome == nil:
		fmt.Fprintf(a.stderr, "%s: not started: %s\n", name, safeLine(c.Note))
	case c.Status == sweep.StatusSkipped, c.Status == sweep.StatusQuota:
		fmt.Fprintf(a.stderr, "%s: not counted: %s\n", name, safeLine(c.Note))
	}
}

func (a *app) gateHeader(s *sweep.Sweep, plan *flows.Plan, rule gate.Rule, b *gate.Baseline) {
	tasks := len(s.Snapshot().Spec.Tasks)
	bar := fmt.Sprintf("success rate at least %g", rule.MinSuccess)
	if b != nil {
		how := "its recorded runs"
		if b.Fresh != nil {
			how = "fresh runs of it, sweep " + b.Fresh.Sweep.ID()
		}
		bar = fmt.Sprintf("not worse than sweep %s's %s (%s)", b.Sweep, b.Assignment, how)
	}
	fmt.Fprintf(a.stderr, "gate %s of %s: %d task(s), %s; margin %g, alpha %g, at most %d trials a task\n",
		s.ID(), plan.Root.Name, tasks, bar, rule.Margin, rule.Alpha, rule.MaxTrials)
}

// gateOutputs writes what CI reads: gate.json beside the trials, --json,
// --junit, and the Markdown summary.
func (a *app) gateOutputs(rep *gate.Report, f gateFlags) error {
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, os.WriteFile(filepath.Join(rep.Sweep, "gate.json"), append(js, '\n'), 0o644))
	if f.json {
		fmt.Fprintln(a.stdout, string(js))
	}
	if f.junit != "" {
		x, err := rep.JUnit()
		if err == nil {
			err = os.WriteFile(f.junit, x, 0o644)
		}
		errs = append(errs, err)
	}
	summary := f.summary
	if summary == "" {
		summary = os.Getenv("GITHUB_STEP_SUMMARY")
	}
	if summary != "" {
		// Appended: a job's steps share the one summary file.
		out, err := os.OpenFile(summary, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			_, err = out.WriteString(rep.Markdown())
			err = errors.Join(err, out.Close())
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing the gate's reports: %w", err)
	}
	return nil
}

func verdictCounts(res *gate.Result) string {
	n := map[gate.Verdict]int{}
	for _, t := range res.Tasks {
		n[t.Verdict]++
	}
	var parts []string
	for _, v := range []gate.Verdict{gate.Pass, gate.Fail, gate.Inconclusive} {
		if n[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[v], v))
		}
	}
	return strings.Join(parts, ", ")
}
