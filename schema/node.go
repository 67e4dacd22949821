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
	KindWait     Kind = "wait"
)

// kindKeys says which keys besides id, budget and on_fail each kind takes.
var kindKeys = map[Kind][]string{
	KindAgent:    {"agent", "prompt", "reads", "output", "memory", "retry", "timeout", "isolation", "land", "repo", "reuse", "delegate"},
	KindRun:      {"run", "env", "timeout", "isolation", "land", "repo", "reuse", "sandbox"},
	KindChoice:   {"choice"},
	KindParallel: {"parallel", "fail_fast", "isolation", "land", "repo"},
	KindMap:      {"map", "max", "concurrency", "fail_fast", "do", "isolation", "land", "repo"},
	KindLoop:     {"loop", "do", "isolation", "land", "repo"},
	KindFlow:     {"flow", "input", "isolation", "land", "repo"},
	KindAsk:      {"ask", "options", "default", "timeout", "show"},
	KindWait:     {"wait", "output"},
}

var commonNodeKeys = []string{"id", "budget", "on_fail"}

// Node is one node of a flow as written: what every kind has, and Spec,
// the fields of its own kind, decoded by that kind (nodekinds.go).
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

	Timeout Duration // agent: one turn; run: the command; ask: the wait for an answer

	// Spec is the kind's own fields: *AgentSpec, *RunSpec, *ChoiceSpec,
	// *ParallelSpec, *MapSpec, *LoopSpec, *CallSpec, *AskSpec or *WaitSpec, as Kind
	// says; nil only when the node has no kind.
	Spec NodeSpec
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
	if n.Spec == nil {
		return nil
	}
	return n.Spec.children()
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
	if nd.Kind != "" {
		nd.Spec = newSpec(nd.Kind)
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
		if !r.commonField(nd, e) {
			nd.Spec.field(r, e, label)
		}
	}
	nd.Spec.require(r, nd.KindPos, label)
	return nd
}

// commonField decodes a key every kind that takes it reads the same way,
// and reports whether e was one.
func (r *reader) commonField(nd *Node, e entry) bool {
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
	case "timeout":
		nd.Timeout = r.duration(e.value, "timeout")
	default:
		return false
	}
	return true
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
