package sweep

import (
	"cmp"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// Report is what report.json holds, and what the other report files show:
// per assignment (and per parameter set) the outcome of its ended cells,
// the statistics, the frontier and the assignment a pin would choose. A
// nil pointer field was not reported by any driver (or cannot be
// computed, as cost per success with no success): it is null in JSON and
// "not reported" elsewhere, never 0.
type Report struct {
	Sweep   string    `json:"sweep"`
	Flow    string    `json:"flow"`
	File    string    `json:"file"`
	Updated time.Time `json:"updated"`
	// Success says what counts as a success.
	Success string `json:"success"`
	Cells   Counts `json:"cells"`
	// Spent is what every cell that ran spent, stopped ones included: the
	// sum of their journals. Budget is the sweep's, if it has one.
	Spent  record.Usage `json:"spent"`
	Budget *Budget      `json:"budget,omitempty"`
	// Overspend says by how much and why the sweep, or a cell's run,
	// ended above its budget.
	Overspend []record.Overspend `json:"overspend,omitempty"`
	// K is the k of pass@k and pass^k: the repeat count.
	K int `json:"k"`
	// Basis is what "cheapest" and the chart's x axis measure: "cost"
	// (USD per run), or where a driver reports no cost "tokens" per run,
	// or where neither is reported "wall" (seconds per run).
	Basis    string `json:"cost_basis"`
	Baseline string `json:"baseline"`
	// Assignments are the rows per assignment, over every parameter set.
	Assignments []*Row `json:"assignments"`
	// ByParams are the rows per assignment and parameter set, when the
	// sweep varies parameters.
	ByParams []*Row     `json:"by_params,omitempty"`
	Nodes    []*NodeRow `json:"nodes"`
	// Tasks are the rows per assignment and task: which task fails where.
	Tasks []*TaskRow `json:"tasks"`
	Pin   *Choice    `json:"pin,omitempty"`
	// Warnings say what the figures leave out: an incomplete grid, a
	// partial cost.
	Warnings []string `json:"warnings,omitempty"`
	// Providers are the rate limiters' figures per provider key; Quota
	// the providers' messages of the quotas that ended cells.
	Providers []ProviderRow `json:"providers,omitempty"`
	Quota     []string      `json:"quota,omitempty"`
	// NullMeans says, in the file itself, what a null field is: "not
	// reported" (by the driver), never 0.
	NullMeans string `json:"null_means"`
}

// Counts counts the sweep's cells by what became of them.
type Counts struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Stopped   int `json:"stopped"`
	Skipped   int `json:"skipped"` // not started: the budget could not cover them
	// SetAside counts the cells that ran and were set aside still failing
	// on the infrastructure after their re-runs (status skipped, with an
	// outcome), by failure kind in SetAsideBy (rate_limit: 2): not scored.
	SetAside   int            `json:"set_aside"`
	SetAsideBy map[string]int `json:"set_aside_by,omitempty"`
	Quota      int            `json:"quota"`   // ended on a quota that is gone: not scored
	NotRun     int            `json:"not_run"` // pending, or cut off while running
}

// Row is one assignment (and parameter set): its ended cells, counted.
type Row struct {
	Assignment string `json:"assignment"`
	Params     string `json:"params,omitempty"`
	N          int    `json:"n"` // ended runs
	Successes  int    `json:"successes"`
	// SuccessRate and its Wilson 95% interval; nil with no ended run.
	SuccessRate *float64 `json:"success_rate"`
	WilsonLow   *float64 `json:"wilson_low"`
	WilsonHigh  *float64 `json:"wilson_high"`
	MeanScore   *float64 `json:"mean_score"`
	// PassAtK and PassHatK average the unbiased per-task estimates over
	// the tasks with at least k ended runs; nil when none has.
	PassAtK    *float64 `json:"pass_at_k"`
	PassHatK   *float64 `json:"pass_hat_k"`
	Input      *int64   `json:"input"`
	Output     *int64   `json:"output"`
	CacheRead  *int64   `json:"cache_read"`
	CacheWrite *int64   `json:"cache_write"`
	Cost       *float64 `json:"cost"`
	// CostPerSuccess is the cost divided by the successes; nil when cost
	// was not reported or nothing succeeded (NoSuccess).
	CostPerSuccess *float64 `json:"cost_per_success"`
	NoSuccess      bool     `json:"no_success,omitempty"`
	// PerRun is the mean of the cost basis per run (Report.Basis).
	PerRun *float64 `json:"per_run"`
	// Turns are the model's turns as usage.json counts them (the
	// drivers' reports); Attempts the agent visits' tries, retries
	// included.
	Turns    *int64         `json:"turns"`
	Attempts int            `json:"attempts"`
	WallP50  *float64       `json:"wall_p50_ms"`
	WallP95  *float64       `json:"wall_p95_ms"`
	Failures map[string]int `json:"failures"`
	Empty    int            `json:"empty_answers"`
	// Reruns counts the runs again after an infrastructure failure,
	// over all the assignment's cells; Quota the cells a quota ended.
	Reruns int `json:"reruns"`
	Quota  int `json:"quota"`
	// CacheHitRatio is cache_read / (input + cache_read) tokens: the share
	// of prompt tokens read from the provider's cache (input excludes
	// cache reads); nil when not reported.
	CacheHitRatio *float64 `json:"cache_hit_ratio"`
	// VsBaseline compares the assignment with the baseline, pairing runs
	// of the same task, parameters and repetition.
	VsBaseline *Comparison `json:"vs_baseline,omitempty"`
	Baseline   bool        `json:"baseline,omitempty"`
	Frontier   bool        `json:"frontier"`
	Pinned     bool        `json:"pinned,omitempty"`
	// NotReported names the fields above that no driver reported.
	NotReported []string `json:"not_reported,omitempty"`
}

// Comparison is a paired comparison with the baseline.
type Comparison struct {
	Pairs  int     `json:"pairs"`
	Wins   int     `json:"wins"`   // this one succeeded, the baseline failed
	Losses int     `json:"losses"` // the baseline succeeded, this one failed
	Ties   int     `json:"ties"`
	P      float64 `json:"p"` // exact McNemar, two-sided
}

// NodeRow is what one node, with one agent on one model, came to under
// one assignment, over every ended run.
type NodeRow struct {
	Assignment  string   `json:"assignment"`
	Node        string   `json:"node"`
	Kind        string   `json:"kind"`
	Agent       string   `json:"agent,omitempty"`
	Model       string   `json:"model,omitempty"`
	Visits      int      `json:"visits"`
	Failures    int      `json:"failures"`
	Tokens      *int64   `json:"tokens"`
	Cost        *float64 `json:"cost"`
	FailsMost   bool     `json:"fails_most,omitempty"`
	CostsMost   bool     `json:"costs_most,omitempty"`
	NotReported []string `json:"not_reported,omitempty"`
}

// Build makes the report of a sweep file.
func Build(f *File) *Report {
	r := &Report{Sweep: f.ID, Flow: f.Flow, File: f.FlowFile, Updated: time.Now().UTC(), K: max(f.Spec.Repeat, 1),
		Success: "the run succeeds", NullMeans: notReported}
	if f.Score != "" {
		r.Success = "the run succeeds and its score " + f.Score + " holds (a number is the score)"
	}
	base, _ := baseline(f.Assignments, f.Spec.Baseline)
	r.Baseline = base.Label
	r.Cells = count(f.Cells)
	r.Spent = spentAll(f)
	if f.Budget != (Budget{}) {
		b := f.Budget
		r.Budget = &b
	}
	r.Overspend = overspends(f, r.Spent)
	byAssignment := map[string][]*Cell{}
	byParams := map[[2]string][]*Cell{}
	for _, c := range f.Cells {
		if c.Status.Ended() && c.Outcome != nil {
			byAssignment[c.Assignment] = append(byAssignment[c.Assignment], c)
			key := [2]string{c.Assignment, c.Params}
			byParams[key] = append(byParams[key], c)
		}
	}
	for _, a := range f.Assignments {
		r.Assignments = append(r.Assignments, row(a.Label, "", byAssignment[a.Label], r.K))
	}
	if len(f.Spec.Params) > 0 {
		for _, a := range f.Assignments {
			for _, ps := range f.ParamSets {
				r.ByParams = append(r.ByParams, row(a.Label, ps.Label, byParams[[2]string{a.Label, ps.Label}], r.K))
			}
		}
	}
	r.Basis = basis(byAssignment)
	for _, rows := range [][]*Row{r.Assignments, r.ByParams} {
		for _, row := range rows {
			row.PerRun = perRun(byParams, byAssignment, row, r.Basis)
		}
	}
	for _, row := range r.Assignments {
		row.Baseline = row.Assignment == base.Label
		if !row.Baseline {
			row.VsBaseline = compare(byAssignment[row.Assignment], byAssignment[base.Label])
		}
	}
	frontier(r.Assignments)
	r.Pin = choose(r.Assignments, byAssignment, r.Basis)
	r.Nodes = nodeRows(f.Assignments, byAssignment)
	infraRows(r, f)
	r.Tasks = taskRows(f)
	r.Warnings = warnings(f, r)
	if r.Pin != nil {
		r.Pin.Warnings = r.Warnings
	}
	return r
}

func count(cells []*Cell) Counts {
	n := Counts{Total: len(cells)}
	for _, c := range cells {
		switch c.Status {
		case StatusSucceeded:
			n.Succeeded++
		case StatusFailed:
			n.Failed++
		case StatusStopped:
			n.Stopped++
		case StatusSkipped:
			if c.Outcome == nil {
				n.Skipped++
				continue
			}
			n.SetAside++
			if n.SetAsideBy == nil {
				n.SetAsideBy = map[string]int{}
			}
			n.SetAsideBy[cmp.Or(c.Outcome.Failure, "unknown")]++
		case StatusQuota:
			n.Quota++
		default:
			n.NotRun++
		}
	}
	return n
}

func row(assignment, params string, cells []*Cell, k int) *Row {
	r := &Row{Assignment: assignment, Params: params, N: len(cells), Failures: map[string]int{}}
	var usage record.Usage
	var walls []int64
	score := 0.0
	perTask := map[string][2]int{} // task and params -> runs, successes
	for _, c := range cells {
		o := c.Outcome
		usage.Add(o.Usage)
		walls = append(walls, o.WallMS)
		r.Attempts += o.Attempts
		r.Empty += o.EmptyAnswers
		score += o.Score
		key := c.Params + "\x00" + c.Task
		t := perTask[key]
		t[0]++
		if o.Success {
			r.Successes++
			t[1]++
		} else {
			r.Failures[cmp.Or(o.Failure, "unknown")]++
		}
		perTask[key] = t
	}
	r.Input, r.Output, r.CacheRead, r.CacheWrite, r.Cost, r.Turns = usage.Input, usage.Output, usage.CacheRead, usage.CacheWrite, usage.Cost, usage.Turns
	if r.N > 0 {
		rate := float64(r.Successes) / float64(r.N)
		low, high := Wilson(r.Successes, r.N)
		mean := score / float64(r.N)
		r.SuccessRate, r.WilsonLow, r.WilsonHigh, r.MeanScore = &rate, &low, &high, &mean
	}
	var at, hat float64
	tasks := 0
	for _, t := range perTask {
		if t[0] >= k {
			at += PassAtK(t[0], t[1], k)
			hat += PassHatK(t[0], t[1], k)
			tasks++
		}
	}
	if tasks > 0 {
		at, hat = at/float64(tasks), hat/float64(tasks)
		r.PassAtK, r.PassHatK = &at, &hat
	}
	switch {
	case r.Cost != nil && r.Successes > 0:
		cps := *r.Cost / float64(r.Successes)
		r.CostPerSuccess = &cps
	case r.N > 0 && r.Successes == 0:
		r.NoSuccess = true
	}
	if p, ok := Percentile(walls, 0.5); ok {
		r.WallP50 = &p
	}
	if p, ok := Percentile(walls, 0.95); ok {
		r.WallP95 = &p
	}
	if r.N > 0 {
		for _, f := range []struct {
			name string
			nil  bool
		}{{"input", r.Input == nil}, {"output", r.Output == nil}, {"cache_read", r.CacheRead == nil},
			{"cache_write", r.CacheWrite == nil}, {"cost", r.Cost == nil}, {"cost_per_success", r.Cost == nil}, {"turns", r.Turns == nil}} {
			if f.nil {
				r.NotReported = append(r.NotReported, f.name)
			}
		}
	}
	return r
}

// basis picks what "cheapest" measures: cost if every assignment with an
// ended run reported it, else tokens if every one did, else wall time.
func basis(byAssignment map[string][]*Cell) string {
	cost, tokens := true, true
	for _, cells := range byAssignment {
		var u record.Usage
		for _, c := range cells {
			u.Add(c.Outcome.Usage)
		}
		cost = cost && u.Cost != nil
		tokens = tokens && (u.Input != nil || u.Output != nil)
	}
	switch {
	case cost && !partialCosts(byAssignment):
		return "cost"
	case tokens:
		return "tokens"
	}
	return "wall"
}

func perRun(byParams map[[2]string][]*Cell, byAssignment map[string][]*Cell, r *Row, basis string) *float64 {
	cells := byAssignment[r.Assignment]
	if r.Params != "" {
		cells = byParams[[2]string{r.Assignment, r.Params}]
	}
	if len(cells) == 0 {
		return nil
	}
	sum := 0.0
	for _, c := range cells {
		u := c.Outcome.Usage
		switch basis {
		case "cost":
			if u.Cost != nil {
				sum += *u.Cost
			}
		case "tokens":
			sum += float64(u.Tokens())
		default:
			sum += float64(c.Outcome.WallMS) / 1000
		}
	}
	v := sum / float64(len(cells))
	return &v
}

// pairKey pairs runs across assignments: same parameters, task and
// repetition.
func pairKey(c *Cell) [3]any { return [3]any{c.Params, c.Task, c.Repeat} }

func compare(these, base []*Cell) *Comparison {
	other := map[[3]any]bool{}
	for _, c := range base {
		other[pairKey(c)] = c.Outcome.Success
	}
	cmp := &Comparison{}
	for _, c := range these {
		b, ok := other[pairKey(c)]
		if !ok {
			continue
		}
		cmp.Pairs++
		a := c.Outcome.Success
		switch {
		case a && !b:
			cmp.Wins++
		case !a && b:
			cmp.Losses++
		default:
			cmp.Ties++
		}
	}
	cmp.P = McNemar(cmp.Wins, cmp.Losses)
	return cmp
}
