package record

import (
	"fmt"
	"strings"
)

// Overspend says that a budget ended above its bound, by how much and why
// (docs/resume-and-budgets.md): a first turn that nothing could price, or
// a turn that was running when the budget ran out. It is recorded on the
// run's end fact, and the summary, flow show, report.html, a sweep's
// report and the API say it from there.
type Overspend struct {
	Budget      string  `json:"budget"` // "flow NAME" or the visit path that set it
	Tokens      int64   `json:"tokens,omitempty"`
	LimitTokens int64   `json:"limit_tokens,omitempty"`
	Cost        float64 `json:"cost,omitempty"`
	LimitCost   float64 `json:"limit_cost,omitempty"`
	Why         string  `json:"why"`
}

// String says it in one line, e.g. "the budget of flow f was overspent by
// $0.0050 (spent $0.0300 of $0.0250): the run's first turn (t1) could not
// be priced before it ran".
func (o Overspend) String() string {
	var by []string
	if o.LimitTokens > 0 {
		by = append(by, fmt.Sprintf("%d tokens (spent %d of %d)", o.Tokens, o.Tokens+o.LimitTokens, o.LimitTokens))
	}
	if o.LimitCost > 0 {
		by = append(by, fmt.Sprintf("$%.4f (spent $%.4f of $%.4f)", o.Cost, o.Cost+o.LimitCost, o.LimitCost))
	}
	return fmt.Sprintf("the budget of %s was overspent by %s: %s", o.Budget, strings.Join(by, " and "), o.Why)
}

// OverspendText is every overspend of a run, one per line.
func OverspendText(over []Overspend) string {
	var lines []string
	for _, o := range over {
		lines = append(lines, o.String())
	}
	return strings.Join(lines, "\n")
}
