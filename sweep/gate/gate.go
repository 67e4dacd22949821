package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/sweep"
)

// Rule is what a task must show.
type Rule struct {
	// MinSuccess is the rate a task must reach (--min-success); unused in
	// baseline mode, where the baseline's rate is the bar.
	MinSuccess float64
	Margin     float64 // the fail hypothesis lies this far below the bar (--margin)
	Alpha      float64 // the bound on each wrong verdict (--alpha)
	MaxTrials  int     // trials of one task at most (--max-trials)
}

// Check says what is wrong with r, for the command line.
func (r Rule) Check(baseline bool) error {
	switch {
	case !baseline && (r.MinSuccess <= 0 || r.MinSuccess > 1):
		return fmt.Errorf("--min-success %g: give a rate in (0, 1], e.g. 0.8", r.MinSuccess)
	case r.Margin <= 0 || r.Margin >= 1:
		return fmt.Errorf("--margin %g: give a rate difference in (0, 1), e.g. 0.2", r.Margin)
	case !baseline && r.Margin >= r.MinSuccess:
		return fmt.Errorf("--margin %g must be below --min-success %g: the gate tells the bar from the bar less the margin", r.Margin, r.MinSuccess)
	case r.Alpha <= 0 || r.Alpha >= 0.5:
		return fmt.Errorf("--alpha %g: give an error rate in (0, 0.5), e.g. 0.05", r.Alpha)
	case r.MaxTrials < 1:
		return fmt.Errorf("--max-trials %d: give at least 1", r.MaxTrials)
	}
	return nil
}

// Runs are the runs of one side of the gate: a sweep whose cells are its
// trials, the plan they run and how.
type Runs struct {
	Sweep *sweep.Sweep
	Plan  *flows.Plan
	Opts  sweep.RunOptions
}

// Baseline is what the candidate is compared with: a sweep's recorded
// runs of one assignment (Recorded, flow gate --reuse), or fresh runs of
// it sampled beside the candidate's (Fresh).
type Baseline struct {
	Sweep      string // the baseline sweep's id
	Assignment string // its assignment's label
	Recorded   map[string]sweep.TaskCount
	Fresh      *Runs
}

// Gate is one flow gate.
type Gate struct {
	Candidate Runs
	Rule      Rule
	Baseline  *Baseline // nil: --min-success
	// Budget bounds the candidate's and the fresh baseline's runs
	// together; zero fields are unbounded.
	Budget sweep.Budget
	// OnDecided is told of each task as its verdict is reached.
	OnDecided func(Task)
	// Halt, when set, is asked after every round for a reason to stop
	// (a recording that does not answer a turn); "" goes on.
	Halt func() string
}

// Task is one task's verdict and the evidence for it.
type Task struct {
	ID        string  `json:"id"`
	Verdict   Verdict `json:"verdict"`
	Trials    int     `json:"trials"`
	Successes int     `json:"successes"`
	Rate      float64 `json:"rate"`
	// Interval is the Wilson score 95% interval of the rate.
	Interval [2]float64 `json:"interval"`
	// PValue is the anytime-valid p-value of the hypothesis the verdict
	// rejects (Tested); for INCONCLUSIVE, of the one nearer rejection.
	PValue float64 `json:"p_value"`
	Tested string  `json:"tested"`
	// Bar is the rate a task must reach: --min-success, or the
	// baseline's estimated rate.
	Bar float64 `json:"bar"`
	// BaselineTrials and BaselineSuccesses are the baseline's samples.
	BaselineTrials    int `json:"baseline_trials,omitempty"`
	BaselineSuccesses int `json:"baseline_successes,omitempty"`
	Round             int `json:"round,omitempty"` // the round it was decided in
}

// Result is how a gate ended.
type Result struct {
	Tasks []Task `json:"tasks"`
	// Ended says why the gate stopped: "decided", "max-trials",
	// "budget", "quota", "infrastructure" (a trial still failing on it
	// after sweep.MaxReruns re-runs), "halted" (Gate.Halt) or
	// "interrupted".
	Ended string `json:"ended"`
	Note  string `json:"note,omitempty"`
}

// Exit is the exit status docs/gate.md gives: 1 when a task failed, 3
// when one is inconclusive and none failed, else 0.
func (r *Result) Exit() int {
	code := 0
	for _, t := range r.Tasks {
		switch t.Verdict {
		case Fail:
			return 1
		case Inconclusive, Open:
			code = 3
		}
	}
	return code
}

// startTrials runs the trials a side of the gate has pending: the one
// place the gate starts runs (Sweep.Run, each cell through its
// runner.Backend).
func startTrials(ctx context.Context, r *Runs) error {
	return r.Sweep.Run(ctx, r.Plan, r.Opts)
}

// Run runs the gate round by round until every task is decided, none may
// have another trial, the budget is spent or ctx is cancelled. The error
// is about the gate's own files; what the trials came to is the Result.
func (g *Gate) Run(ctx context.Context) (*Result, error) {
	f := g.Candidate.Sweep.Snapshot()
	res := &Result{}
	open := map[string]int{} // task id → index in res.Tasks
	for _, t := range f.Spec.Tasks {
		open[t.ID] = len(res.Tasks)
		res.Tasks = append(res.Tasks, Task{ID: t.ID})
	}
	for round := 1; ; round++ {
		if err := g.round(ctx); err != nil {
			return res, err
		}
		cand := g.Candidate.Sweep.Snapshot()
		counts := cand.TaskCounts("")
		base := g.baseCounts()
		var next []string
		for _, t := range f.Spec.Tasks {
			i, ok := open[t.ID]
			if !ok {
				continue
			}
			task := &res.Tasks[i]
			g.assess(task, counts[t.ID], base[t.ID])
			if task.Verdict != Open {
				task.Round = round
				delete(open, t.ID)
				if g.OnDecided != nil {
					g.OnDecided(*task)
				}
				continue
			}
			if n := counts[t.ID]; n.Trials+n.Open < g.Rule.MaxTrials {
				next = append(next, t.ID)
			}
		}
		if len(open) == 0 {
			res.Ended = "decided"
			break
		}
		res.Ended = "max-trials"
		files := []*sweep.File{cand}
		if g.Baseline != nil && g.Baseline.Fresh != nil {
			files = append(files, g.Baseline.Fresh.Sweep.Snapshot())
		}
		if why, note := stopped(ctx, files); why != "" {
			res.Ended, res.Note = why, note
			break
		}
		if g.Halt != nil {
			if note := g.Halt(); note != "" {
				res.Ended, res.Note = "halted", note
				break
			}
		}
		if len(next) == 0 {
			break
		}
		if err := g.add(next); err != nil {
			return res, err
		}
	}
	for _, i := range open {
		res.Tasks[i].Verdict = Inconclusive
		if g.OnDecided != nil {
			g.OnDecided(res.Tasks[i])
		}
	}
	return res, nil
}

// round runs the pending trials of the candidate, then of a fresh
// baseline, each under what the other left of the budget.
func (g *Gate) round(ctx context.Context) error {
	sides := []*Runs{&g.Candidate}
	if g.Baseline != nil && g.Baseline.Fresh != nil {
		sides = append(sides, g.Baseline.Fresh)
	}
	for i, side := range sides {
		if g.Budget != (sweep.Budget{}) {
			b := g.Budget
			if len(sides) == 2 {
				other := sides[1-i].Sweep.Spent()
				b = left(g.Budget, other)
			}
			if err := side.Sweep.SetBudget(b); err != nil {
				return err
			}
		}
		if err := startTrials(ctx, side); err != nil {
			return err
		}
	}
	return nil
}

// left is what b leaves after spent: never zero where b bounds, since a
// zero field is unbounded.
func left(b, spent sweep.Budget) sweep.Budget {
	out := b
	if b.Cost > 0 {
		out.Cost = max(b.Cost-spent.Cost, 1e-12)
	}
	if b.Tokens > 0 {
		out.Tokens = max(b.Tokens-spent.Tokens, 1)
	}
	return out
}

func (g *Gate) add(tasks []string) error {
	if err := g.Candidate.Sweep.AddTrials(tasks); err != nil {
		return err
	}
	if g.Baseline != nil && g.Baseline.Fresh != nil {
		return g.Baseline.Fresh.Sweep.AddTrials(tasks)
	}
	return nil
}

func (g *Gate) baseCounts() map[string]sweep.TaskCount {
	switch {
	case g.Baseline == nil:
		return nil
	case g.Baseline.Fresh != nil:
		return g.Baseline.Fresh.Sweep.Snapshot().TaskCounts("")
	}
	return g.Baseline.Recorded
}

// assess sets a task's figures and its verdict from its counts (and the
// baseline's): open while the test has not decided and trials remain.
func (g *Gate) assess(t *Task, n, base sweep.TaskCount) {
	t.Trials, t.Successes = n.Trials, n.Successes
	t.Rate = 0
	if n.Trials > 0 {
		t.Rate = float64(n.Successes) / float64(n.Trials)
	}
	t.Interval[0], t.Interval[1] = sweep.Wilson(n.Successes, n.Trials)
	test := Test{Bar: g.Rule.MinSuccess, Margin: g.Rule.Margin, Alpha: g.Rule.Alpha}
	if g.Baseline != nil {
		test.Bar = BaselineRate(base.Trials, base.Successes)
		t.BaselineTrials, t.BaselineSuccesses = base.Trials, base.Successes
	}
	t.Bar = test.Bar
	t.Verdict = test.Decide(n.Trials, n.Successes)
	pass, fail := test.PValues(n.Trials, n.Successes)
	switch {
	case t.Verdict == Pass || t.Verdict == Open && pass <= fail:
		t.PValue, t.Tested = pass, fmt.Sprintf("rate <= %.3g", test.Low())
	default:
		t.PValue, t.Tested = fail, fmt.Sprintf("rate >= %.3g", test.Bar)
	}
}

// BaselineRate is the bar a baseline of c successes in n trials sets:
// (c+1)/(n+2), Laplace's rule of succession, so that a baseline that never
// failed in ten runs is not taken to never fail, nor one that never
// succeeded to never succeed.
func BaselineRate(n, c int) float64 { return float64(c+1) / float64(n+2) }

// stopped says why the gate must stop before another round, if it must:
// interrupted, a trial the budget could not cover, or a quota.
func stopped(ctx context.Context, files []*sweep.File) (string, string) {
	if ctx.Err() != nil {
		return "interrupted", "interrupted: the verdicts so far stand; the rest are INCONCLUSIVE"
	}
	for _, f := range files {
		for _, c := range f.Cells {
			switch {
			case c.Status == sweep.StatusSkipped && c.Outcome == nil:
				return "budget", "a trial was not started: " + c.Note
			case c.Status == sweep.StatusQuota:
				return "quota", "a trial ran out of its provider's quota: " + firstLine(c.Note)
			case c.Status == sweep.StatusSkipped:
				// Set aside after sweep.MaxReruns infrastructure failures:
				// not a passing outage.
				return "infrastructure", "a trial was set aside: " + firstLine(c.Note)
			}
		}
	}
	return "", ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
