package flows

import (
	"time"

	"github.com/flowrun/flow/schema"
)

// Worst is the most a node or a sequence can cost: agent turns and wall
// time, counting retries, typed-output send-backs, loop and map bounds and
// each turn's timeout.
type Worst struct {
	Turns int
	Time  time.Duration
}

// SequenceEstimate is the worst case of a sequence, node by node.
type SequenceEstimate struct {
	Worst
	Nodes []*NodeEstimate
}

// NodeEstimate is the worst case of one node, with what its turns resolve
// to: the same model and timeout a run of the plan resolves (Settings).
type NodeEstimate struct {
	Node *Node
	Worst
	Model   string        // agent nodes: the resolved model; "" leaves it to the driver
	Timeout time.Duration // agent nodes: the bound on a turn; run nodes: on the command
	// Branches are a choice's (labelled "when <guard>" or "else") or a
	// parallel's (labelled by name).
	Branches []*BranchEstimate
	// Body is a map's or loop's body, or a called flow's nodes.
	Body *SequenceEstimate
	// Delegates are the agents a delegating agent node may start, each
	// with the model its children's turns resolve to (docs/delegation.md).
	// Their turns are not in Worst: how many there are, only earlier runs
	// tell (package sweep forecasts them).
	Delegates []DelegateEstimate
}

// DelegateEstimate is an agent a node may delegate to, and its model.
type DelegateEstimate struct {
	Agent *Agent
	Model string
}

// BranchEstimate is one branch of a choice or parallel.
type BranchEstimate struct {
	Label string
	*SequenceEstimate
}

// Estimate works out the worst case of every node of p, run with s, as
// `flow plan` shows it.
func Estimate(p *Plan, s Settings) *SequenceEstimate {
	return estimateSequence(p, s, &Calls{Flow: p.Root}, p.Root.Nodes)
}

func estimateSequence(p *Plan, s Settings, c *Calls, nodes []*Node) *SequenceEstimate {
	seq := &SequenceEstimate{}
	for _, n := range nodes {
		e := estimateNode(p, s, c, n)
		seq.Nodes = append(seq.Nodes, e)
		seq.Turns += e.Turns
		seq.Time += e.Time
	}
	return seq
}

func estimateNode(p *Plan, s Settings, c *Calls, n *Node) *NodeEstimate {
	e := &NodeEstimate{Node: n}
	switch ns := n.Spec.(type) {
	case *AgentNode:
		per := 1
		if ns.Typed {
			per = 2 // an answer that does not fit is sent back once
		}
		e.Model, e.Timeout = s.ResolveModel(c, ns.Agent), s.ResolveTimeout(c, n)
		if ns.Delegate != nil {
			for _, name := range ns.Delegate.Agents {
				if a := p.Agents[name]; a != nil {
					e.Delegates = append(e.Delegates, DelegateEstimate{Agent: a, Model: s.ResolveModel(c, a)})
				}
			}
		}
		e.Turns = per * (ns.Retry + 1)
		e.Time = time.Duration(e.Turns) * e.Timeout
	case *RunNode:
		e.Timeout = RunTimeout(n)
		e.Time = e.Timeout
	case *ChoiceNode, *ParallelNode:
		for _, b := range n.Branches() {
			label := b.Name
			if n.Kind == schema.KindChoice {
				label = "else"
				if !b.Else {
					label = "when " + b.When.Source
				}
			}
			be := &BranchEstimate{Label: label, SequenceEstimate: estimateSequence(p, s, c, b.Nodes)}
			e.Branches = append(e.Branches, be)
			if n.Kind == schema.KindChoice { // one branch runs
				e.Turns = max(e.Turns, be.Turns)
			} else { // every branch runs, side by side
				e.Turns += be.Turns
			}
			e.Time = max(e.Time, be.Time)
		}
	case *MapNode:
		e.Body = estimateSequence(p, s, c, ns.Body)
		waves := (ns.Max + ns.Concurrency - 1) / ns.Concurrency
		e.Turns, e.Time = e.Body.Turns*ns.Max, e.Body.Time*time.Duration(waves)
	case *LoopNode:
		e.Body = estimateSequence(p, s, c, ns.Body)
		e.Turns, e.Time = e.Body.Turns*ns.Max, e.Body.Time*time.Duration(ns.Max)
	case *CallNode:
		if callee := p.Flows[ns.Callee]; callee != nil {
			e.Body = estimateSequence(p, s, c.Call(callee), callee.Nodes)
			e.Worst = e.Body.Worst
		}
	}
	return e
}
