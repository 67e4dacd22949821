package flows

import (
	"time"

	"github.com/flowrun/flow/schema"
)

// Plan is a checked flow, compiled and ready to run: every agent resolved,
// every guard and template compiled against types, every called flow loaded.
// A Plan is immutable and safe to share between goroutines.
type Plan struct {
	Root   *Flow
	Flows  map[string]*Flow  // every flow the run may enter, by name, the root included
	Agents map[string]*Agent // every agent the run may use, by name
	// Catalogue is every agent the root flow could name.
	Catalogue *Catalogue
	// Warnings are problems that do not stop the flow from running.
	Warnings schema.Diagnostics
	// Limits are the loader's, defaults filled in: the engine bounds a
	// turn's prompt by Limits.PromptBytes.
	Limits schema.Limits
}

// Flow is one compiled flow file.
type Flow struct {
	Name  string
	File  string
	Doc   *schema.Flow
	Input *schema.Type // nil: the input is a string
	Model string
	// Models is the flow's `models:`, by agent name: what a sweep pins.
	Models      map[string]string
	Timeout     time.Duration // 0: not set here
	Budget      *Budget
	Concurrency int // 0: not set here
	Nodes       []*Node
	Schedule    *Schedule // nil: not scheduled
	// Output is the type of the flow's result: its last node's output.
	Output *schema.Type
	// Sweep is the flow's `sweep:` section, or nil.
	Sweep *Sweep
}

// Budget is what a flow or node may spend; a zero field is unbounded.
type Budget struct {
	Tokens int64
	Cost   float64
}

// Node is one compiled node: what every kind has, and Spec, the fields of
// its own kind (nodekinds.go).
type Node struct {
	ID   string
	Kind schema.Kind
	Pos  schema.Pos
	Doc  *schema.Node
	// Output is the static type of the node's output.
	Output   *schema.Type
	Budget   *Budget
	Continue bool // on_fail: continue

	// working copies (docs/worktrees.md): agent, run, parallel, map, loop, flow
	Isolation bool      // isolation: worktree
	Land      string    // with Isolation: merge (the default), rebase or none
	Repo      *Template // with Isolation: the repository; nil means the working directory's
	// Isolates says this node or one below it, through called flows too,
	// is isolated: a map or parallel then lands its items in order.
	Isolates bool

	// Timeout is the node's timeout: (agent: one turn; run: the command;
	// ask: the wait for an answer); 0: not set on the node.
	Timeout time.Duration

	// Reuse is the node's `reuse:`: "" (agents reusable, commands not),
	// ReuseAlways or ReuseNever (docs/reuse-and-tests.md).
	Reuse string

	// Spec is the kind's own fields: *AgentNode, *RunNode, *ChoiceNode,
	// *ParallelNode, *MapNode, *LoopNode, *CallNode or *AskNode, as Kind
	// says; never nil in a loaded plan.
	Spec Spec

	// key is the static part of the node's visit key, computed when the
	// plan is loaded (Key).
	key *staticKey
}

// The values of a node's `reuse:`.
const (
	ReuseAlways = "true"
	ReuseNever  = "never"
)

// Branch is a choice branch (When, or Else) or a named parallel branch.
type Branch struct {
	Name  string // parallel branch name
	When  *Expr
	Else  bool
	Nodes []*Node
}

// Read is one address of an agent node's `reads`.
type Read struct {
	Address string
	Expr    *Expr
	// IsNode says the address names a node (or a loop's previous node), so
	// the turn shows its output, or its failure as JSON.
	IsNode bool
}

// EnvVar is one environment variable of a run node.
type EnvVar struct {
	Name  string
	Value *Template
}

// EachNode calls fn for every node of nodes and below, parents first. (It
// is not engine.Walk, which runs a plan.)
func EachNode(nodes []*Node, fn func(*Node)) {
	for _, n := range nodes {
		fn(n)
		for _, b := range n.Branches() {
			EachNode(b.Nodes, fn)
		}
		EachNode(n.Body(), fn)
	}
}

// NodeValueType is the type under which a node is addressed in expressions:
// `x.ok`, `x.output`, `x.error.kind`, `x.skipped`.
func NodeValueType(output *schema.Type) *schema.Type {
	return schema.ObjectOf(
		schema.F("ok", schema.BooleanType),
		schema.F("output", output),
		schema.F("error", ErrorType),
		schema.F("skipped", schema.BooleanType),
	)
}

// ValueType is the type under which n is addressed in expressions.
func (n *Node) ValueType() *schema.Type {
	if !n.Isolation {
		return NodeValueType(n.Output)
	}
	names := make([]string, len(n.Branches()))
	for i, b := range n.Branches() {
		names[i] = b.Name
	}
	return isolatedValueType(n.Kind, n.Output, names)
}

// isolatedValueType is NodeValueType of an isolated node, with `x.worktree`
// beside its output: how its scopes landed. One scope's for an agent, run,
// loop or flow call; a list in item order for a map; an object by branch
// name for a parallel.
func isolatedValueType(kind schema.Kind, output *schema.Type, branches []string) *schema.Type {
	t := NodeValueType(output)
	wt := WorktreeType
	switch kind {
	case schema.KindMap:
		wt = schema.ListOf(WorktreeType)
	case schema.KindParallel:
		wt = &schema.Type{Kind: schema.TObject}
		for _, b := range branches {
			wt.Fields = append(wt.Fields, schema.F(b, WorktreeType))
		}
	}
	t.Fields = append(t.Fields, schema.F("worktree", wt))
	return t
}

// WorktreeType is how one isolated scope ended (docs/worktrees.md): its branch, its
// last commit, the files it changed, and whether it landed on the run's
// integration branch.
var WorktreeType = schema.ObjectOf(
	schema.F("branch", schema.StringType),
	schema.F("commit", schema.StringType),
	schema.F("files", schema.ListOf(schema.StringType)),
	schema.F("landed", schema.BooleanType),
)

// ErrorType is the type of a node's `error`: empty strings when it succeeded.
var ErrorType = schema.ObjectOf(
	schema.F("kind", schema.StringType),
	schema.F("message", schema.StringType),
	schema.F("visit", schema.StringType),
)

// RunOutput is the output type of a run node.
var RunOutput = schema.ObjectOf(
	schema.F("passed", schema.BooleanType),
	schema.F("exit", schema.IntegerType),
	schema.F("report", schema.StringType),
)
