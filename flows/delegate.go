package flows

import (
	"strings"

	"github.com/flowrun/flow/schema"
)

// Delegate is who an agent's turn may start during the turn, and within
// what (docs/delegation.md). Children inherit it: a child may delegate in
// turn, to the same agents, while its depth is below MaxDepth.
type Delegate struct {
	Agents []string `json:"agents"`
	// MaxDepth bounds the whole subtree: 1 lets the visit start children
	// and its children start none.
	MaxDepth int `json:"max_depth"`
	// MaxChildren is the most children one visit starts over its life.
	MaxChildren int `json:"max_children"`
	// Concurrency is the most children of one visit running at once.
	Concurrency int `json:"concurrency"`
	// Budget is what the subtree spends together, within the visit's own
	// budgets; nil: only those bound it.
	Budget *Budget `json:"budget,omitempty"`

	// at are the agents' positions where they were written; empty when
	// the definition came back from a run's snapshot.
	at []schema.Pos
}

// Delegation's defaults (docs/delegation.md).
const (
	DefaultDelegateDepth    = 1
	DefaultDelegateChildren = 4
)

// delegateOf resolves a delegate: as written, its defaults filled in.
func delegateOf(d *schema.Delegate) *Delegate {
	if d == nil {
		return nil
	}
	out := &Delegate{MaxDepth: DefaultDelegateDepth, MaxChildren: DefaultDelegateChildren, Budget: budget(d.Budget)}
	for _, a := range d.Agents {
		out.Agents = append(out.Agents, a.Value)
		out.at = append(out.at, a.Pos)
	}
	if d.MaxDepth.IsSet {
		out.MaxDepth = d.MaxDepth.Value
	}
	if d.MaxChildren.IsSet {
		out.MaxChildren = d.MaxChildren.Value
	}
	out.Concurrency = out.MaxChildren
	if d.Concurrency.IsSet {
		out.Concurrency = min(d.Concurrency.Value, out.MaxChildren)
	}
	return out
}

// delegation gives an agent node its delegation: its own delegate:, else
// its agent file's. Every agent it names must be in the catalogue, and
// joins the plan's agents, so that a run's snapshot holds them.
func (c *checker) delegation(n *Node, an *AgentNode, d *schema.AgentSpec) {
	del := delegateOf(d.Delegate)
	if del == nil && an.Agent != nil {
		del = an.Agent.Delegate
	}
	if del == nil {
		return
	}
	for i, name := range del.Agents {
		pos := n.Pos
		if i < len(del.at) {
			pos = del.at[i]
		}
		a := c.cat.Lookup(name)
		if a == nil {
			var names []string
			for _, k := range c.cat.Agents() {
				names = append(names, k.Name)
			}
			hint := schema.DidYouMean(name, names)
			if hint == "" {
				hint = "known agents: " + strings.Join(names, ", ")
			}
			c.diags.Add(pos, schema.CodeDelegate, hint, "unknown agent %q to delegate to", name)
			continue
		}
		c.loader.plan.Agents[a.Name] = a
		if !c.loader.opts.knowsDriver(a.Driver) {
			c.diags.Add(pos, schema.CodeDriver, "set driver: in the agent file, or a default driver in the configuration", "agent %q has driver %q, which flow does not know", a.Name, a.Driver)
		}
	}
	an.Delegate = del
}
