package schema

import "github.com/goccy/go-yaml/ast"

// Delegate is an agent node's (or an agent file's) `delegate:` as written:
// who the agent may start during its turn, and the limits on them
// (docs/delegation.md).
type Delegate struct {
	Pos         Pos
	Agents      []String
	MaxDepth    Int
	MaxChildren Int
	Concurrency Int
	Budget      *Budget
}

func (r *reader) delegate(n ast.Node) *Delegate {
	es, ok := r.mapping(n, "delegate", delegateKeys)
	if !ok {
		return nil
	}
	d := &Delegate{Pos: r.pos(n)}
	for _, e := range es {
		switch e.key {
		case "agents":
			d.Agents = r.strings(e.value, "delegate.agents")
			if len(d.Agents) == 0 && !isScalar(e.value) { // a scalar is a type error already
				r.errorf(e.value, CodeEmpty, "name the agents it may start: agents: [scout]", "delegate.agents is empty")
			}
		case "max_depth":
			d.MaxDepth = r.integer(e.value, "delegate.max_depth", 1)
		case "max_children":
			d.MaxChildren = r.integer(e.value, "delegate.max_children", 1)
		case "concurrency":
			d.Concurrency = r.integer(e.value, "delegate.concurrency", 1)
		case "budget":
			d.Budget = r.budget(e.value)
		}
	}
	if nodeAt(es, "agents") == nil {
		r.errorf(n, CodeMissing, "add agents: [the agents it may start]", "delegate names no agents")
	}
	return d
}
