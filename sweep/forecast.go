package sweep

import (
	"slices"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// History is what earlier runs of one flow spent: how often each agent
// node was visited in a run, and what one visit of each agent on each
// model cost. A forecast is made of it; it is never an estimate of what a
// model might cost, only a record of what it did. Its zero value is not
// usable; call NewHistory. It is not safe for concurrent use.
type History struct {
	flow     string
	runs     []map[string]int         // per run: agent visits by node id
	kids     []map[childKey]int       // per run: children by delegating node and agent (children.go)
	perVisit map[agentModel]*visitUse // by agent and model
}

type agentModel struct{ agent, model string }

// visitUse holds one sample per visit, of what it reported.
type visitUse struct {
	tokens, cost []float64
}

// NewHistory returns an empty history of the flow named flow.
func NewHistory(flow string) *History {
	return &History{flow: flow, perVisit: map[agentModel]*visitUse{}}
}

// ReadHistory reads every run of flow under each of dirs (run directories
// such as .flow/runs, and sweeps' cells directories). Runs still going,
// or that never ended, are left out: they would undercount visits.
func ReadHistory(flow string, dirs ...string) (*History, error) {
	h := NewHistory(flow)
	for _, dir := range dirs {
		runs, err := rundir.List(dir)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Flow == flow && (r.Status == record.StatusSucceeded || r.Status == record.StatusFailed) {
				h.Add(r.Facts)
			}
		}
	}
	return h, nil
}

// Runs is how many runs the history holds.
func (h *History) Runs() int { return len(h.runs) }

// Add adds one ended run's facts.
func (h *History) Add(facts []*record.Fact) {
	visits := map[string]int{}
	for _, f := range facts {
		if f.Type != record.FactEnd || f.Kind != schema.KindAgent {
			continue
		}
		visits[f.Node]++
		if f.Usage == nil {
			continue
		}
		key := agentModel{f.Agent, f.Model}
		u := h.perVisit[key]
		if u == nil {
			u = &visitUse{}
			h.perVisit[key] = u
		}
		if f.Usage.Input != nil || f.Usage.Output != nil {
			u.tokens = append(u.tokens, float64(f.Usage.Tokens()))
		}
		if f.Usage.Cost != nil {
			u.cost = append(u.cost, *f.Usage.Cost)
		}
	}
	h.runs = append(h.runs, visits)
	h.kids = append(h.kids, childCounts(facts))
}

// Range is a forecast of one quantity: the least, the mean and the most
// that earlier runs imply. Known is false when some agent on some model
// has no record: then the range is unknown, never 0.
type Range struct {
	Known    bool    `json:"known"`
	Low      float64 `json:"low"`
	Expected float64 `json:"expected"`
	High     float64 `json:"high"`
}

func (r *Range) add(o Range) {
	r.Low += o.Low
	r.Expected += o.Expected
	r.High += o.High
}

// scaled is r times n.
func (r Range) scaled(n int) Range {
	f := float64(n)
	return Range{Known: r.Known, Low: r.Low * f, Expected: r.Expected * f, High: r.High * f}
}

// Forecast is what one run of an assignment is expected to take.
type Forecast struct {
	Turns  int   `json:"turns"` // the worst case (flows.Estimate)
	Tokens Range `json:"tokens"`
	Cost   Range `json:"cost"`
	// Missing names the agents and models no earlier run recorded usage
	// for, as "coder on beta" (with no earlier run at all, it is empty and
	// both ranges are unknown).
	Missing []string `json:"missing,omitempty"`
}

// Forecast forecasts one run whose worst case is est: per agent node, the
// visits earlier runs made of it times what a visit of its agent on its
// resolved model reported. Low, expected and high use the fewest, mean
// and most of each.
func (h *History) Forecast(est *flows.SequenceEstimate) Forecast {
	fc := Forecast{Turns: est.Turns, Tokens: Range{Known: len(h.runs) > 0}, Cost: Range{Known: len(h.runs) > 0}}
	if len(h.runs) == 0 {
		return fc
	}
	for _, e := range agentEstimates(est) {
		counts := make([]float64, len(h.runs))
		for i, r := range h.runs {
			counts[i] = float64(r[e.Node.ID])
		}
		visits := spread(counts)
		if visits.High == 0 {
			continue // never visited: it adds nothing that is known
		}
		u := h.perVisit[agentModel{e.Node.Agent().Name, e.Model}]
		var tokens, cost []float64
		if u != nil {
			tokens, cost = u.tokens, u.cost
		}
		if len(tokens) == 0 || len(cost) == 0 {
			model := e.Model
			if model == "" {
				model = "its driver's default model"
			}
			if name := e.Node.Agent().Name + " on " + model; !slices.Contains(fc.Missing, name) {
				fc.Missing = append(fc.Missing, name)
			}
		}
		fc.Tokens.addProduct(visits, tokens)
		fc.Cost.addProduct(visits, cost)
		h.addChildren(&fc, e)
	}
	return fc
}

// addProduct adds visits times per-visit samples; no sample makes the
// range unknown.
func (r *Range) addProduct(visits Range, samples []float64) {
	if len(samples) == 0 {
		r.Known = false
		return
	}
	per := spread(samples)
	r.add(Range{Low: visits.Low * per.Low, Expected: visits.Expected * per.Expected, High: visits.High * per.High})
}

func spread(xs []float64) Range {
	r := Range{Known: true, Low: xs[0], High: xs[0]}
	sum := 0.0
	for _, x := range xs {
		r.Low, r.High = min(r.Low, x), max(r.High, x)
		sum += x
	}
	r.Expected = sum / float64(len(xs))
	return r
}

// agentEstimates lists the agent nodes of an estimate, in called flows
// and blocks too.
func agentEstimates(seq *flows.SequenceEstimate) []*flows.NodeEstimate {
	var out []*flows.NodeEstimate
	for _, e := range seq.Nodes {
		if e.Node.Agent() != nil {
			out = append(out, e)
		}
		for _, b := range e.Branches {
			out = append(out, agentEstimates(b.SequenceEstimate)...)
		}
		if e.Body != nil {
			out = append(out, agentEstimates(e.Body)...)
		}
	}
	return out
}

// Outlook is the forecast of the cells left to run, spread evenly over
// the assignments: their worst-case turns, and tokens and cost, unknown
// when any assignment's is.
type Outlook struct {
	Cells   int
	Turns   int
	Tokens  Range
	Cost    Range
	Missing []string // agents and models no earlier run reported
}

// OutlookOf sums the forecasts of cells runs over the assignments.
func OutlookOf(plan *flows.Plan, as []Assignment, cells int, base flows.Settings, h *History) Outlook {
	fcs := Forecasts(plan, as, base, h)
	per := cells / max(len(as), 1)
	o := Outlook{Cells: cells, Tokens: Range{Known: true}, Cost: Range{Known: true}}
	for _, a := range as {
		fc := fcs[a.Label]
		o.Turns += fc.Turns * per
		for _, p := range []struct {
			into *Range
			r    Range
		}{{&o.Tokens, fc.Tokens}, {&o.Cost, fc.Cost}} {
			p.into.Known = p.into.Known && p.r.Known
			p.into.add(p.r.scaled(per))
		}
		for _, m := range fc.Missing {
			if !slices.Contains(o.Missing, m) {
				o.Missing = append(o.Missing, m)
			}
		}
	}
	return o
}
