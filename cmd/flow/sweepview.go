package main

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/sweep"
)

// What flow sweep prints: the grid, the forecast, a line per cell, and the
// summary. The reports are the sweep package's.

func (a *app) printForecast(plan *flows.Plan, as []sweep.Assignment, cells int, base flows.Settings) error {
	history, err := a.history(plan.Root.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "%d assignment(s), %d cell(s) (one run each)\n", len(as), cells)
	a.printForecastWith(plan, as, cells, base, history)
	return nil
}

// printForecastWith prints, before anything runs, the worst-case turns and
// the forecast of tokens and cost for cells runs spread evenly over the
// assignments; what no earlier run recorded stays unknown.
func (a *app) printForecastWith(plan *flows.Plan, as []sweep.Assignment, cells int, base flows.Settings, h *sweep.History) sweep.Outlook {
	o := sweep.OutlookOf(plan, as, cells, base, h)
	fmt.Fprintf(a.stderr, "to run: %d cell(s), worst case %d agent turn(s) in all\n", cells, o.Turns)
	if h.Runs() == 0 {
		fmt.Fprintf(a.stderr, "forecast: tokens and cost unknown: no earlier run of %s recorded usage\n", plan.Root.Name)
		return o
	}
	tok, usd := "unknown", "unknown"
	if o.Tokens.Known {
		tok = fmt.Sprintf("%.0f–%.0f (expected %.0f)", o.Tokens.Low, o.Tokens.High, o.Tokens.Expected)
	}
	if o.Cost.Known {
		usd = fmt.Sprintf("$%.4f–$%.4f (expected $%.4f)", o.Cost.Low, o.Cost.High, o.Cost.Expected)
	}
	fmt.Fprintf(a.stderr, "forecast from %d earlier run(s): tokens %s, cost %s\n", h.Runs(), tok, usd)
	if len(o.Missing) > 0 {
		fmt.Fprintf(a.stderr, "  unknown: no earlier run reported usage for %s\n", strings.Join(o.Missing, ", "))
	}
	return o
}

// warnOverBudget says before anything runs that the forecast exceeds the
// sweep's budget, so some cells will not start.
func (a *app) warnOverBudget(o sweep.Outlook, b sweep.Budget) {
	if b.Cost > 0 && o.Cost.Known && o.Cost.Expected > b.Cost {
		fmt.Fprintf(a.stderr, "the forecast cost $%.4f exceeds the budget $%.4f: cells it cannot cover will not start\n", o.Cost.Expected, b.Cost)
	}
	if b.Tokens > 0 && o.Tokens.Known && o.Tokens.Expected > float64(b.Tokens) {
		fmt.Fprintf(a.stderr, "the forecast of %.0f tokens exceeds the budget of %d: cells it cannot cover will not start\n", o.Tokens.Expected, b.Tokens)
	}
}

func gridText(f *sweep.File) string {
	parts := []string{fmt.Sprintf("%d assignment(s)", len(f.Assignments))}
	if n := len(f.ParamSets); n > 1 {
		parts = append(parts, fmt.Sprintf("%d parameter set(s)", n))
	}
	parts = append(parts, fmt.Sprintf("%d task(s)", len(f.Spec.Tasks)), fmt.Sprintf("repeat %d", max(f.Spec.Repeat, 1)))
	s := strings.Join(parts, " × ") + fmt.Sprintf(" = %d cell(s), %d at a time", len(f.Cells), f.Concurrency)
	if f.Budget.Cost > 0 {
		s += fmt.Sprintf(", budget $%.4f", f.Budget.Cost)
	}
	if f.Budget.Tokens > 0 {
		s += fmt.Sprintf(", budget %d tokens", f.Budget.Tokens)
	}
	return s
}

// cellLine prints one line per cell that starts or ends.
func (a *app) cellLine(ev sweep.CellEvent) {
	c := ev.Cell
	name := fmt.Sprintf("cell %d/%d %s", c.Index, ev.Of, c.Assignment)
	if c.Params != "" {
		name += " [" + c.Params + "]"
	}
	name += fmt.Sprintf(" %s #%d", c.Task, c.Repeat)
	switch {
	case ev.Waiting != "":
		fmt.Fprintf(a.stderr, "%s: %s\n", name, ev.Waiting)
	case ev.Started:
		fmt.Fprintf(a.stderr, "%s: started (run %s)\n", name, c.Run)
	case c.Status == sweep.StatusSkipped && c.Outcome == nil:
		fmt.Fprintf(a.stderr, "%s: not started: %s\n", name, c.Note)
	case c.Status == sweep.StatusSkipped, c.Status == sweep.StatusQuota:
		fmt.Fprintf(a.stderr, "%s: not scored: %s\n", name, c.Note)
	case c.Status == sweep.StatusRunning:
		fmt.Fprintf(a.stderr, "%s: left alone: %s\n", name, c.Note)
	case c.Outcome != nil:
		o := c.Outcome
		what := string(c.Status)
		switch {
		case o.Failure == string(schema.FailRefused) && o.Message != "":
			// Flow could not run the cell: the reason is not in a run's
			// journal to read later, so it is said here.
			what += " (" + o.Failure + ": " + safeLine(o.Message) + ")"
		case o.Failure != "":
			what += " (" + o.Failure + ")"
		}
		fmt.Fprintf(a.stderr, "%s: %s in %s, tokens %s, cost %s\n", name, what, fmtMS(o.WallMS), rundir.TokensText(o.Usage), rundir.CostText(o.Usage))
	default:
		fmt.Fprintf(a.stderr, "%s: %s\n", name, c.Status)
	}
}

func countsText(c sweep.Counts) string {
	s := fmt.Sprintf("%d of %d cell(s) ended: %d succeeded, %d failed; %d stopped, %d skipped, %d not run",
		c.Succeeded+c.Failed, c.Total, c.Succeeded, c.Failed, c.Stopped, c.Skipped, c.NotRun)
	if c.SetAside > 0 {
		s += fmt.Sprintf("; %d %s", c.SetAside, c.SetAsideText())
	}
	if c.Quota > 0 {
		s += fmt.Sprintf("; %d ended on a quota, not scored", c.Quota)
	}
	return s
}

// printSummary prints the per-assignment table on stdout.
func (a *app) printSummary(r *sweep.Report) {
	for _, row := range r.Assignments {
		rate := "–"
		if row.SuccessRate != nil {
			rate = fmt.Sprintf("%.0f%% [%.0f%%, %.0f%%]", *row.SuccessRate*100, *row.WilsonLow*100, *row.WilsonHigh*100)
		}
		cost := "not reported"
		switch {
		case row.N == 0:
			cost = "–"
		case row.Cost != nil:
			cost = fmt.Sprintf("$%.4f", *row.Cost)
		}
		mark := ""
		if row.Frontier {
			mark += " frontier"
		}
		if row.Pinned {
			mark += " chosen"
		}
		fmt.Fprintf(a.stdout, "%-30s %d/%d  %-18s cost %s%s\n", row.Assignment, row.Successes, row.N, rate, cost, mark)
	}
	for _, t := range r.Tasks {
		if t.Successes < t.N && len(r.Tasks) > 1 {
			fmt.Fprintf(a.stdout, "  %s fails task %s: %d of %d succeeded\n", t.Assignment, t.Task, t.Successes, t.N)
		}
	}
	if r.Pin != nil {
		fmt.Fprintf(a.stdout, "chosen: %s — %s\n", r.Pin.Assignment, r.Pin.Reason)
	}
	fmt.Fprintf(a.stderr, "spent %s tokens, cost %s\n", rundir.TokensText(r.Spent), rundir.CostText(r.Spent))
	for _, o := range r.Overspend {
		fmt.Fprintf(a.stderr, "overspent: %s\n", safeText(o.String()))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(a.stdout, "warning: %s\n", w)
	}
}

// budgetFlags names the flags of the budget the sweep was given, for a
// hint to give them again, larger.
func budgetFlags(b sweep.Budget) string {
	var flags []string
	if b.Tokens > 0 {
		flags = append(flags, "--budget-tokens …")
	}
	if b.Cost > 0 {
		flags = append(flags, "--budget-cost …")
	}
	if len(flags) == 0 {
		return "--budget-tokens … or --budget-cost …"
	}
	return strings.Join(flags, " ")
}
