package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flowrun/flow/schema"
)

// TaskRow is one assignment on one task (and parameter set): where a
// success rate over every task comes from, and which task an assignment
// fails on.
type TaskRow struct {
	Assignment string         `json:"assignment"`
	Task       string         `json:"task"`
	Params     string         `json:"params,omitempty"`
	N          int            `json:"n"`
	Successes  int            `json:"successes"`
	Failures   map[string]int `json:"failures,omitempty"`
}

// taskRows counts the ended cells per assignment, task and parameter set,
// in the grid's order.
func taskRows(f *File) []*TaskRow {
	var rows []*TaskRow
	at := map[[3]string]*TaskRow{}
	for _, c := range f.Cells {
		if !c.Status.Ended() || c.Outcome == nil {
			continue
		}
		key := [3]string{c.Assignment, c.Task, c.Params}
		r := at[key]
		if r == nil {
			r = &TaskRow{Assignment: c.Assignment, Task: c.Task, Params: c.Params, Failures: map[string]int{}}
			at[key] = r
			rows = append(rows, r)
		}
		r.N++
		if c.Outcome.Success {
			r.Successes++
		} else {
			r.Failures[orUnknown(c.Outcome.Failure)]++
		}
	}
	slices.SortStableFunc(rows, func(a, b *TaskRow) int { return strings.Compare(a.Assignment, b.Assignment) })
	return rows
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// partialCost reports whether a run's cost leaves an agent out: one agent
// node reported a cost and another, which ran, did not.
func (o *Outcome) partialCost() bool {
	some, missing := false, false
	for _, n := range o.Nodes {
		if n.Kind != schema.KindAgent {
			continue
		}
		if n.Usage.Cost != nil {
			some = true
		} else {
			missing = true
		}
	}
	return some && missing
}

// warnings says what the report's figures do not cover: cells a budget
// skipped, set aside on the infrastructure (rate-limited), or that did
// not run (a choice made on an incomplete grid), and
// costs that leave an agent out (compared as tokens instead).
func warnings(f *File, r *Report) []string {
	var out []string
	c := r.Cells
	if missing := c.Skipped + c.SetAside + c.NotRun + c.Stopped; missing > 0 {
		// Only what happened is named: no "0 skipped by a budget" in a
		// sweep that has none.
		var parts []string
		for _, p := range []struct {
			n    int
			what string
		}{{c.Skipped, "skipped by a budget"}, {c.SetAside, c.SetAsideText()}, {c.Stopped, "stopped"}, {c.NotRun, "not run"}} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
			}
		}
		what := fmt.Sprintf("%d of %d cells did not end (%s)", missing, c.Total, strings.Join(parts, ", "))
		if r.Pin != nil {
			out = append(out, "incomplete grid: "+what+"; the choice is made without them and may change once they run (flow sweep --resume)")
		} else {
			out = append(out, "incomplete grid: "+what)
		}
	}
	partial := map[string]int{}
	for _, c := range f.Cells {
		if c.Outcome != nil && c.Outcome.partialCost() {
			partial[c.Assignment]++
		}
	}
	for _, a := range f.Assignments {
		if n := partial[a.Label]; n > 0 {
			out = append(out, fmt.Sprintf("partial cost: in %d run(s) of %s an agent reported no cost; its cost is a lower bound, and runs are compared by %s", n, a.Label, r.Basis))
		}
	}
	return out
}

// partialCosts reports whether any ended cell's cost leaves an agent out.
func partialCosts(byAssignment map[string][]*Cell) bool {
	for _, cells := range byAssignment {
		for _, c := range cells {
			if c.Outcome.partialCost() {
				return true
			}
		}
	}
	return false
}

var taskColumns = []string{"assignment", "task", "params", "n", "successes", "failures"}

func (t *TaskRow) cells() []string {
	var fails []string
	for _, k := range slices.Sorted(mapKeys(t.Failures)) {
		fails = append(fails, k+" "+strconv.Itoa(t.Failures[k]))
	}
	return []string{t.Assignment, t.Task, t.Params, strconv.Itoa(t.N), strconv.Itoa(t.Successes), strings.Join(fails, ", ")}
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// SetAsideText says why the cells counted in SetAside were set aside:
// "set aside still failing on the infrastructure after re-runs
// (rate_limit 2), not scored".
func (c Counts) SetAsideText() string {
	var by []string
	for _, k := range slices.Sorted(mapKeys(c.SetAsideBy)) {
		by = append(by, k+" "+strconv.Itoa(c.SetAsideBy[k]))
	}
	s := "set aside still failing on the infrastructure after re-runs"
	if len(by) > 0 {
		s += " (" + strings.Join(by, ", ") + ")"
	}
	return s + ", not scored"
}
