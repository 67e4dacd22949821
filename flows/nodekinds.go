package flows

import (
	"github.com/flowrun/flow/schema"
)

// The kinds' own fields, compiled: a Node holds exactly one of these as its
// Spec, so a field of one kind cannot be read, or left zero, on another.

// Spec is the fields of one compiled node kind.
type Spec interface {
	Kind() schema.Kind
}

// AgentNode is an agent node: one turn of Agent.
type AgentNode struct {
	Agent        *Agent
	Prompt       *Template
	Reads        []*Read
	Typed        bool   // the node declared output:
	OutputSchema []byte // JSON Schema of a typed output
	Memory       string // "", "flow", or the id of an enclosing node
	Retry        int
	// Delegate is who the turn may start and within what (the node's
	// delegate:, else its agent file's), or nil (docs/delegation.md).
	Delegate *Delegate
}

// RunNode is a run node: a command, as an argv or a script.
type RunNode struct {
	Argv    []*Template
	Script  *Script
	Env     []EnvVar
	Sandbox bool // the node says sandbox: on
}

// ChoiceNode is a choice node: its first branch whose guard holds runs.
type ChoiceNode struct {
	Branches []*Branch
}

// ParallelNode is a parallel node: named branches that run together.
type ParallelNode struct {
	Branches []*Branch
	FailFast bool
}

// MapNode is a map node: Body run for each item Items gives.
type MapNode struct {
	Items       *Expr
	Max         int
	Concurrency int
	FailFast    bool
	Body        []*Node
}

// LoopNode is a loop node: Body run until Until holds, at most Max times.
type LoopNode struct {
	Until *Expr
	Max   int
	Body  []*Node
}

// CallNode is a flow node: the call of the plan's flow Callee.
type CallNode struct {
	Callee string
	Input  *Expr
}

// AskNode is an ask node: a question for a person.
type AskNode struct {
	Question string    // the ask: as written
	Ask      *Template // the ask: compiled, rendered when the visit comes
	// Show is the ask's `show:`: node values the person sees in full
	// before the question.
	Show       []*Read
	Options    []string
	Default    string
	HasDefault bool
}

func (*AgentNode) Kind() schema.Kind    { return schema.KindAgent }
func (*RunNode) Kind() schema.Kind      { return schema.KindRun }
func (*ChoiceNode) Kind() schema.Kind   { return schema.KindChoice }
func (*ParallelNode) Kind() schema.Kind { return schema.KindParallel }
func (*MapNode) Kind() schema.Kind      { return schema.KindMap }
func (*LoopNode) Kind() schema.Kind     { return schema.KindLoop }
func (*CallNode) Kind() schema.Kind     { return schema.KindFlow }
func (*AskNode) Kind() schema.Kind      { return schema.KindAsk }

// AsAgent returns n's agent fields, or nil when n is of another kind; so
// do AsRun, AsChoice, AsParallel, AsMap, AsLoop, AsCall and AsAsk.
func (n *Node) AsAgent() *AgentNode       { s, _ := n.Spec.(*AgentNode); return s }
func (n *Node) AsRun() *RunNode           { s, _ := n.Spec.(*RunNode); return s }
func (n *Node) AsChoice() *ChoiceNode     { s, _ := n.Spec.(*ChoiceNode); return s }
func (n *Node) AsParallel() *ParallelNode { s, _ := n.Spec.(*ParallelNode); return s }
func (n *Node) AsMap() *MapNode           { s, _ := n.Spec.(*MapNode); return s }
func (n *Node) AsLoop() *LoopNode         { s, _ := n.Spec.(*LoopNode); return s }
func (n *Node) AsCall() *CallNode         { s, _ := n.Spec.(*CallNode); return s }
func (n *Node) AsAsk() *AskNode           { s, _ := n.Spec.(*AskNode); return s }

// Branches returns the branches of a choice or parallel node, nil for
// any other kind.
func (n *Node) Branches() []*Branch {
	switch s := n.Spec.(type) {
	case *ChoiceNode:
		return s.Branches
	case *ParallelNode:
		return s.Branches
	}
	return nil
}

// Body returns the sequence a map or loop node runs, nil for any other
// kind.
func (n *Node) Body() []*Node {
	switch s := n.Spec.(type) {
	case *MapNode:
		return s.Body
	case *LoopNode:
		return s.Body
	}
	return nil
}

// FailFast reports whether a parallel or map node stops its other
// branches or items at the first failure.
func (n *Node) FailFast() bool {
	switch s := n.Spec.(type) {
	case *ParallelNode:
		return s.FailFast
	case *MapNode:
		return s.FailFast
	}
	return false
}

// Agent returns the agent an agent node runs, nil for any other kind (and
// for an agent node whose agent did not resolve).
func (n *Node) Agent() *Agent {
	if s := n.AsAgent(); s != nil {
		return s.Agent
	}
	return nil
}
