package sweep

import (
	"slices"
	"strconv"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

// Children a node delegated to are part of what a run of it spends
// (docs/delegation.md): a forecast counts them from history, as it counts
// the node's own visits — per run, how many children of each agent the
// node's visits started (a child's children are its node's too: the tree
// shares the node's agents), times what a turn of that agent on the model
// a child resolves to reported.

// delegPrefix begins the segment of a delegated child's visit path:
// lead/delegate:scout#1.
const delegPrefix = "/delegate:"

// childCounts counts, in one run's facts, the children each node's visits
// started, by node id and child agent (childKey). A child that ran more
// than once (a retry, a resume) is one child.
func childCounts(facts []*record.Fact) map[childKey]int {
	seen := map[string]bool{}
	out := map[childKey]int{}
	for _, f := range facts {
		if f.Type != record.FactEnd || seen[f.Visit] {
			continue
		}
		i := strings.Index(f.Visit, delegPrefix)
		if i < 0 {
			continue
		}
		seen[f.Visit] = true
		agent := f.Agent
		if agent == "" {
			agent = strings.TrimPrefix(f.Node, "delegate:")
		}
		out[childKey{nodeOf(f.Visit[:i]), agent}]++
	}
	return out
}

// childKey is a delegating node and a child agent.
type childKey struct{ node, agent string }

// nodeOf is the node id of a visit path's last segment (review#2/verdict,
// look[3]/scout).
func nodeOf(path string) string {
	seg := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.LastIndexByte(seg, '#'); i > 0 {
		if _, err := strconv.Atoi(seg[i+1:]); err == nil {
			seg = seg[:i]
		}
	}
	if i := strings.LastIndexByte(seg, '['); i > 0 && strings.HasSuffix(seg, "]") {
		seg = seg[:i]
	}
	return seg
}

// ChildForecast is what the children of one agent that a node delegates
// to are expected to take in one run: how many there are, and their
// tokens and cost.
type ChildForecast struct {
	Agent    string `json:"agent"`
	Model    string `json:"model,omitempty"`
	Children Range  `json:"children"`
	Tokens   Range  `json:"tokens"`
	Cost     Range  `json:"cost"`
}

// Children forecasts the children of the delegating node of e, per agent
// it may start, from the runs h holds; none when h holds no run or e's
// node delegates to no one. An agent no earlier run started under the
// node adds nothing known: it is left out.
func (h *History) Children(e *flows.NodeEstimate) []ChildForecast {
	if len(h.runs) == 0 {
		return nil
	}
	var out []ChildForecast
	for _, d := range e.Delegates {
		counts := make([]float64, len(h.kids))
		for i, k := range h.kids {
			counts[i] = float64(k[childKey{e.Node.ID, d.Agent.Name}])
		}
		n := spread(counts)
		if n.High == 0 {
			continue
		}
		cf := ChildForecast{Agent: d.Agent.Name, Model: d.Model, Children: n, Tokens: Range{Known: true}, Cost: Range{Known: true}}
		var tokens, cost []float64
		if u := h.perVisit[agentModel{d.Agent.Name, d.Model}]; u != nil {
			tokens, cost = u.tokens, u.cost
		}
		cf.Tokens.addProduct(n, tokens)
		cf.Cost.addProduct(n, cost)
		out = append(out, cf)
	}
	return out
}

// addChildren adds the forecast of e's children to fc.
func (h *History) addChildren(fc *Forecast, e *flows.NodeEstimate) {
	for _, c := range h.Children(e) {
		fc.Tokens.Known = fc.Tokens.Known && c.Tokens.Known
		fc.Tokens.add(c.Tokens)
		fc.Cost.Known = fc.Cost.Known && c.Cost.Known
		fc.Cost.add(c.Cost)
		if !c.Tokens.Known || !c.Cost.Known {
			model := c.Model
			if model == "" {
				model = "its driver's default model"
			}
			if name := c.Agent + " on " + model; !slices.Contains(fc.Missing, name) {
				fc.Missing = append(fc.Missing, name)
			}
		}
	}
}
