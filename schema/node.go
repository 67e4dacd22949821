package schema

import (
	"fmt"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Kind is a node's kind; the set is closed (docs/flow-files.md, Node kinds).
type Kind string

// The node kinds.
const (
	KindAgent    Kind = "agent"
	KindRun      Kind = "run"
	KindChoice   Kind = "choice"
	KindParallel Kind = "parallel"
	KindMap      Kind = "map"
	KindLoop     Kind = "loop"
	KindFlow     Kind = "flow"
	KindAsk      Kind = "ask"
)

// kindKeys says which keys besides id, budget and on_fail each kind takes.
var kindKeys = map[Kind][]string{
	KindAgent:    {"agent", "prompt", "reads", "output", "memory", "retry", "timeout", "isolation", "land", "repo", "reuse", "delegate"},
	KindRun:      {"run", "env", "timeout", "isolation", "land", "repo", "reuse"},
	KindChoice:   {"choice"},
	KindParallel: {"parallel", "fail_fast", "isolation", "land", "repo"},
	KindMap:      {"map", "max", "concurrency", "fail_fast", "do", "isolation", "land", "repo"},
	KindLoop:     {"loop", "do", "isolation", "land", "repo"},
	KindFlow:     {"flow", "input", "isolation", "land", "repo"},
	KindAsk:      {"ask", "options", "default", "timeout", "show"},
}

var commonNodeKeys = []string{"id", "budget", "on_fail"}

// Node is one node of a flow as written. Exactly one kind key is set; the
// fields of other kinds stay zero.
type Node struct {
	Pos     Pos
	ID      String
	Kind    Kind
	KindPos Pos // the kind key, where kind-level errors point

	Budget *Budget
	OnFail String // fail (default) | continue

	// working copies (agent, run, parallel, map, loop, flow; docs/worktrees.md)
	Isolation String // worktree
	Land      String // merge (default) | rebase | none
	Reuse     String // true | never (docs/reuse-and-tests.md)
	Repo      String // the repository to isolate in; default the working directory's

	// agent
	Agent       String
	InlineAgent *AgentDoc
	Prompt      String
	Reads       []String
	Output      *Type
	Memory      String
	Retry       Int
	Timeout     Duration // agent: one turn; run: the command; ask: the wait for an answer
	Delegate    *Delegate

	// run
	Argv   []String
	Script String
	Env    []EnvVar

	// choice
	Choice []*Branch

	// parallel
	Parallel []*ParallelBranch
	FailFast Bool

	// map
	Map         String
	Max         Int
	Concurrency Int

	// loop
	Until String

	// map and loop
	Do    []*Node
	DoPos Pos

	// flow
	Flow  String
	Input String

	// ask
	Ask     String
	Options []String
	Default String
	// Show lists the nodes whose outputs the person sees in full before
	// answering (docs/flow-files.md).
	Show []String
}

// EnvVar is one entry of a run node's env.
type EnvVar struct {
	Name  string
	Value String
}

// Branch is one branch of a choice: `when` with `do`, or `else`.
type Branch struct {
	Pos  Pos
	When String
	Else bool
	Do   []*Node
}

// ParallelBranch is one named branch of a parallel node.
type ParallelBranch struct {
	Name String
	Do   []*Node
}

// Children returns every sequence directly inside n, in file order.
func (n *Node) Children() [][]*Node {
	switch n.Kind {
	case KindChoice:
		out := make([][]*Node, len(n.Choice))
		for i, b := range n.Choice {
			out[i] = b.Do
		}
		return out
	case KindParallel:
		out := make([][]*Node, len(n.Parallel))
		for i, b := range n.Parallel {
			out[i] = b.Do
		}
		return out
	case KindMap, KindLoop:
		return [][]*Node{n.Do}
	}
	return nil
}

func (r *reader) sequence(n ast.Node, what string) []*Node {
	items, ok := r.list(n, what)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		r.errorf(n, CodeEmpty, "add at least one node", "%s is empty", what)
	}
	out := make([]*Node, 0, len(items))
	for _, it := range items {
		if nd := r.node(it); nd != nil {
			out = append(out, nd)
		}
	}
	return out
}

func (r *reader) node(n ast.Node) *Node {
	es, ok := r.mapping(n, "a node", nodeKeys)
	if !ok {
		return nil
	}
	nd := &Node{Pos: r.pos(n)}
	var kinds []string
	for _, e := range es {
		if contains(nodeKindKeys, e.key) {
			kinds = append(kinds, e.key)
			nd.Kind, nd.KindPos = Kind(e.key), r.pos(e.keyN)
		}
		if e.key == "id" {
			nd.ID = r.str(e.value, "id")
		}
	}
	if len(es) > 0 {
		nd.Pos = r.pos(es[0].keyN)
	}
	label := "node"
	if nd.ID.Set() {
		label = fmt.Sprintf("node %q", nd.ID.Value)
	}
	switch {
	case !nd.ID.Set():
		r.errorf(n, CodeMissing, "add id: (letters, digits and _), unique in the file", "the node has no id")
	case !validID(nd.ID.Value):
		r.errorf(nodeAt(es, "id"), CodeID, "ids are letters, digits and _, starting with a letter or _", "%q is not a valid id", nd.ID.Value)
	}
	if len(kinds) == 0 {
		r.errorf(n, CodeKind, "give the node one of: "+strings.Join(nodeKindKeys, ", "), "%s has no kind", label)
		return nd
	}
	if len(kinds) > 1 {
		r.errorf(n, CodeKind, "split it into one node per kind", "%s has several kinds: %s", label, strings.Join(kinds, ", "))
		return nd
	}
	allowed := append(append([]string{}, commonNodeKeys...), kindKeys[nd.Kind]...)
	for _, e := range es {
		if !contains(allowed, e.key) {
			r.errorf(e.keyN, CodeKey, "remove it, or use it on a node kind that takes it ("+kindsTaking(e.key)+")", "%s is %s node and does not take %q", label, article(nd.Kind), e.key)
			continue
		}
		r.nodeField(nd, e, label)
	}
	r.requireForKind(nd, n, label)
	return nd
}

func (r *reader) nodeField(nd *Node, e entry, label string) {
	switch e.key {
	case "budget":
		nd.Budget = r.budget(e.value)
	case "on_fail":
		nd.OnFail = r.str(e.value, "on_fail")
		if !contains([]string{"fail", "continue"}, nd.OnFail.Value) {
			r.errorf(e.value, CodeValue, "use fail (the default) or continue", "on_fail is %q", nd.OnFail.Value)
		}
	case "isolation":
		nd.Isolation = r.str(e.value, "isolation")
		if nd.Isolation.Value != "worktree" {
			r.errorf(e.value, CodeValue, "use isolation: worktree", "isolation is %q", nd.Isolation.Value)
		}
	case "land":
		nd.Land = r.str(e.value, "land")
		if !contains([]string{"merge", "rebase", "none"}, nd.Land.Value) {
			r.errorf(e.value, CodeValue, "use merge (the default), rebase or none", "land is %q", nd.Land.Value)
		}
	case "reuse":
		nd.Reuse = r.str(e.value, "reuse")
		if !contains([]string{"true", "never"}, nd.Reuse.Value) {
			r.errorf(e.value, CodeValue, "use reuse: true (a run node's result may be reused) or reuse: never", "reuse is %q", nd.Reuse.Value)
		}
	case "repo":
		nd.Repo = r.str(e.value, "repo")
		if !nd.Repo.Set() {
			r.errorf(e.value, CodeEmpty, "give the repository's directory, or leave repo: out to use the working directory's", "repo is empty")
		}
	case "agent":
		if isScalar(e.value) {
			nd.Agent = r.str(e.value, "agent")
		} else {
			nd.InlineAgent = r.inlineAgent(e.value)
			nd.Agent = String{Value: nd.InlineAgent.Name.Value, Pos: r.pos(e.value)}
		}
	case "delegate":
		nd.Delegate = r.delegate(e.value)
	case "prompt":
		nd.Prompt = r.str(e.value, "prompt")
	case "reads":
		nd.Reads = r.strings(e.value, "reads")
	case "output":
		nd.Output = r.typeExpr(e.value, "output")
	case "memory":
		nd.Memory = r.str(e.value, "memory")
	case "retry":
		nd.Retry = r.integer(e.value, "retry", 0)
	case "timeout":
		nd.Timeout = r.duration(e.value, "timeout")
	case "run":
		if isScalar(e.value) {
			nd.Script = r.str(e.value, "run")
			if !nd.Script.Set() {
				r.errorf(e.value, CodeEmpty, "give a command", "run is empty")
			}
		} else {
			nd.Argv = r.strings(e.value, "run")
			if len(nd.Argv) == 0 {
				r.errorf(e.value, CodeEmpty, "give the argv as a list: [go, test, ./...]", "run is empty")
			}
		}
	case "env":
		es, _ := r.mapping(e.value, "env", nil)
		for _, v := range es {
			nd.Env = append(nd.Env, EnvVar{Name: v.key, Value: r.str(v.value, "env."+v.key)})
		}
	case "choice":
		items, _ := r.list(e.value, "choice")
		for _, it := range items {
			if b := r.branch(it); b != nil {
				nd.Choice = append(nd.Choice, b)
			}
		}
		if len(nd.Choice) == 0 {
			r.errorf(e.value, CodeEmpty, "add `- when: <guard>` branches, each with do:", "%s has no branches", label)
		}
	case "parallel":
		es, ok := r.mapping(e.value, "parallel", nil)
		if ok && len(es) == 0 {
			r.errorf(e.value, CodeEmpty, "add named branches: `name: [nodes]`", "%s has no branches", label)
		}
		for _, b := range es {
			name := String{Value: b.key, Pos: r.pos(b.keyN)}
			if !validID(b.key) {
				r.errorf(b.keyN, CodeID, "branch names are letters, digits and _", "%q is not a valid branch name", b.key)
			}
			nd.Parallel = append(nd.Parallel, &ParallelBranch{Name: name, Do: r.sequence(b.value, "branch "+b.key)})
		}
	case "fail_fast":
		nd.FailFast = r.boolean(e.value, "fail_fast")
	case "map":
		nd.Map = r.str(e.value, "map")
	case "max":
		nd.Max = r.integer(e.value, "max", 1)
	case "concurrency":
		nd.Concurrency = r.integer(e.value, "concurrency", 1)
	case "loop":
		es, ok := r.mapping(e.value, "loop", loopKeys)
		if !ok {
			return
		}
		for _, l := range es {
			switch l.key {
			case "until":
				nd.Until = r.str(l.value, "loop.until")
			case "max":
				nd.Max = r.integer(l.value, "loop.max", 1)
			}
		}
		if !nd.Until.Set() {
			r.errorf(e.keyN, CodeMissing, "add until: <a guard that says when the loop is done>", "%s has no until", label)
		}
		if !nd.Max.IsSet {
			r.errorf(e.keyN, CodeBound, "add max: <the most iterations>; reaching it fails `unconverged`", "%s has no max", label)
		}
	case "do":
		nd.DoPos = r.pos(e.keyN)
		nd.Do = r.sequence(e.value, "do")
	case "flow":
		nd.Flow = r.str(e.value, "flow")
	case "input":
		nd.Input = r.str(e.value, "input")
	case "ask":
		nd.Ask = r.str(e.value, "ask")
	case "options":
		nd.Options = r.strings(e.value, "options")
	case "default":
		nd.Default = r.str(e.value, "default")
	case "show":
		nd.Show = r.strings(e.value, "show")
	}
}

func (r *reader) requireForKind(nd *Node, n ast.Node, label string) {
	at := func() Pos { return nd.KindPos }
	switch nd.Kind {
	case KindAgent:
		if !nd.Agent.Set() && nd.InlineAgent == nil {
			r.diags.Add(at(), CodeMissing, "name an agent from the catalogue (flow agents lists them)", "%s names no agent", label)
		}
		if !nd.Prompt.Set() {
			r.diags.Add(at(), CodeMissing, "add prompt: what this turn should do", "%s has no prompt", label)
		}
	case KindMap:
		if !nd.Map.Set() {
			r.diags.Add(at(), CodeMissing, "give an expression that yields a list, e.g. map: input.files", "%s has an empty map expression", label)
		}
		if !nd.Max.IsSet {
			r.diags.Add(at(), CodeBound, "add max: <the most items>; a longer list fails `too-many` before any item runs", "%s has no max", label)
		}
		if nd.Do == nil {
			r.diags.Add(at(), CodeMissing, "add do: with the nodes to run for each item", "%s has no do", label)
		}
	case KindLoop:
		if nd.Do == nil {
			r.diags.Add(at(), CodeMissing, "add do: with the nodes of one iteration", "%s has no do", label)
		}
	case KindFlow:
		if !nd.Flow.Set() {
			r.diags.Add(at(), CodeMissing, "name a flow file beside this one, without .yaml", "%s names no flow", label)
		}
	case KindAsk:
		if !nd.Ask.Set() {
			r.diags.Add(at(), CodeMissing, "write the question", "%s has an empty question", label)
		}
		if nd.Default.Set() && len(nd.Options) > 0 && !containsStr(nd.Options, nd.Default.Value) {
			r.diags.Add(nd.Default.Pos, CodeValue, "make the default one of the options", "default %q is not one of the options", nd.Default.Value)
		}
	}
}

func containsStr(list []String, s string) bool {
	for _, x := range list {
		if x.Value == s {
			return true
		}
	}
	return false
}

func nodeAt(es []entry, key string) ast.Node {
	for _, e := range es {
		if e.key == key {
			return e.value
		}
	}
	return nil
}

func validID(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

func kindsTaking(key string) string {
	var ks []string
	for _, k := range nodeKindKeys {
		if contains(kindKeys[Kind(k)], key) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func article(k Kind) string {
	if k == KindAgent || k == KindAsk {
		return "an " + string(k)
	}
	return "a " + string(k)
}
