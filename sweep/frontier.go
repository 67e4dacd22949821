package sweep

import (
	"fmt"
	"slices"
)

// The choice a pin makes (docs/sweeps.md): among the assignments on the
// cost-versus-success frontier, the cheapest whose success is not
// significantly below the best's.

// significance is the level below which a difference counts.
const significance = 0.05

// Choice is the assignment a pin writes, and why.
type Choice struct {
	Assignment string `json:"assignment"`
	Best       string `json:"best"` // the assignment with the highest success rate
	Reason     string `json:"reason"`
	// Warnings are the report's: what the choice was made without.
	Warnings []string `json:"-"`
}

// frontier marks the rows on the Pareto frontier of cost (PerRun, lower is
// better) against success rate (higher is better): no other row is as
// cheap and at least as successful, and better in one of the two.
func frontier(rows []*Row) {
	pts := points(rows)
	for _, r := range pts {
		r.Frontier = !slices.ContainsFunc(pts, func(o *Row) bool { return dominates(o, r) })
	}
}

func points(rows []*Row) []*Row {
	var out []*Row
	for _, r := range rows {
		if r.N > 0 && r.PerRun != nil {
			out = append(out, r)
		}
	}
	return out
}

func dominates(a, b *Row) bool {
	ca, cb, sa, sb := *a.PerRun, *b.PerRun, *a.SuccessRate, *b.SuccessRate
	return ca <= cb && sa >= sb && (ca < cb || sa > sb)
}

// choose picks the assignment to pin. The best is the highest success
// rate (the cheaper on a tie). Another assignment on the frontier is as
// good when its success rate is at least the best's, or when nothing shows
// it below: the paired exact McNemar test (runs of the same task,
// parameters and repetition, where there are pairs; else the two Wilson
// intervals overlapping) finds no difference at the 5% level, AND each
// success rate lies inside the other's Wilson 95% interval. The second
// condition keeps a small sweep — where no test can find anything — from
// choosing an assignment that visibly fails more: against a best that never
// failed, any failure rules a candidate out. The cheapest of those is
// chosen.
func choose(rows []*Row, byAssignment map[string][]*Cell, basis string) *Choice {
	pts := points(rows)
	if len(pts) == 0 {
		return nil
	}
	best := pts[0]
	for _, r := range pts[1:] {
		if *r.SuccessRate > *best.SuccessRate || *r.SuccessRate == *best.SuccessRate && *r.PerRun < *best.PerRun {
			best = r
		}
	}
	chosen, why := best, "it has the highest success rate"
	for _, r := range pts {
		if !r.Frontier || r == best || *r.PerRun >= *chosen.PerRun {
			continue
		}
		if ok, reason := asGood(r, best, byAssignment); ok {
			chosen, why = r, reason
		}
	}
	chosen.Pinned = true
	return &Choice{Assignment: chosen.Assignment, Best: best.Assignment,
		Reason: fmt.Sprintf("cheapest on the frontier (%s per run) whose success is not significantly below the best's (%s): %s", basis, best.Assignment, why)}
}

// asGood says whether r's success is not significantly below best's.
func asGood(r, best *Row, byAssignment map[string][]*Cell) (bool, string) {
	rate := fmt.Sprintf("%d/%d against %d/%d", r.Successes, r.N, best.Successes, best.N)
	if *r.SuccessRate >= *best.SuccessRate {
		return true, rate + ", no lower"
	}
	if *r.SuccessRate < *best.WilsonLow || *best.SuccessRate > *r.WilsonHigh {
		return false, ""
	}
	if c := compare(byAssignment[r.Assignment], byAssignment[best.Assignment]); c.Pairs > 0 {
		if c.P < significance && c.Losses > c.Wins {
			return false, ""
		}
		return true, fmt.Sprintf("%s; paired: %d wins, %d losses, %d ties, McNemar p = %.3f", rate, c.Wins, c.Losses, c.Ties, c.P)
	}
	if *r.WilsonHigh < *best.WilsonLow {
		return false, ""
	}
	return true, fmt.Sprintf("%s; unpaired: the Wilson 95%% intervals overlap", rate)
}
