package flows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// The parts of a visit's key (docs/reuse-and-tests.md), in the order
// `flow plan --reuse` names the first that differs.
const (
	KeyNode      = "node"      // the node's definition as written
	KeyAgent     = "agent"     // the agent file's content
	KeyDriver    = "driver"    // the agent's driver
	KeyModel     = "model"     // the resolved model
	KeyTools     = "tools"     // the agent's tools
	KeySchema    = "schema"    // the output schema
	KeyPrompt    = "prompt"    // the resolved turn text, reads included
	KeyMemory    = "memory"    // the memory scope's chain of earlier keys
	KeyIteration = "iteration" // the enclosing loops' iterations
	KeyCommand   = "command"   // a run node's argv or script and env
	KeyWorkdir   = "workdir"   // with reuse: true, the working directory's content
	KeyRepeat    = "repeat"    // a sweep's repeat
)

// KeyOrder is the order of the parts of a key.
var KeyOrder = []string{KeyNode, KeyAgent, KeyDriver, KeyModel, KeyTools, KeySchema, KeyPrompt, KeyMemory, KeyIteration, KeyCommand, KeyWorkdir, KeyRepeat}

// VisitKey is what determines one visit's outcome: its key, the hash of
// its parts, and each part's own hash, so that a miss can name the first
// part that differs.
type VisitKey = schema.VisitKey

// KeyInput is what only the walk knows of a visit: the dynamic parts of
// its key. Roots are the paths of this run (its run directory, the
// working directory) that the turn text names; they are replaced by fixed
// words, so that a key never holds a path, a run id or a time.
type KeyInput struct {
	Path   string // the visit path: only its loop iterations are kept
	Model  string
	Prompt string
	Chain  string // the memory scope's chain of earlier keys, "" without memory
	Argv   []string
	Script string
	Env    []string
	Repeat int // a sweep's repeat, 0 or 1 outside one
	// Workdir is the identity of the working directory's content, for a
	// run node that says reuse: true ("" for none).
	Workdir string
	Roots   map[string]string
}

// staticKey is the hash of each part of n that the walk cannot change:
// computed once when the plan is loaded.
type staticKey struct {
	node, agent, driver, tools, schema string
}

func hashOf(v any) string {
	b, _ := json.Marshal(v) // maps are sorted, structs in field order: canonical
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// computeStatic fills n.key for flow f's node n.
func computeStatic(flow string, n *Node) {
	an, rn := n.AsAgent(), n.AsRun()
	if an == nil {
		an = &AgentNode{} // the parts of the key another kind has not: zero, as they always were
	}
	if rn == nil {
		rn = &RunNode{}
	}
	def := map[string]any{"flow": flow, "id": n.ID, "kind": n.Kind, "typed": an.Typed, "memory": an.Memory}
	if an.Prompt != nil {
		def["prompt"] = an.Prompt.Source
	}
	var reads []string
	for _, r := range an.Reads {
		reads = append(reads, r.Address)
	}
	def["reads"] = reads
	var argv []string
	for _, a := range rn.Argv {
		argv = append(argv, a.Source)
	}
	def["argv"] = argv
	if rn.Script != nil {
		def["script"] = rn.Script.Source
	}
	var env []string
	for _, e := range rn.Env {
		env = append(env, e.Name+"="+e.Value.Source)
	}
	def["env"] = env
	k := &staticKey{node: hashOf(def), schema: hashOf(string(an.OutputSchema))}
	if a := an.Agent; a != nil {
		k.agent = hashOf(agentParts(a))
		k.driver = hashOf(a.Driver)
		k.tools = hashOf(a.Tools)
	}
	n.key = k
}

// Key is the key of a visit of n with the dynamic parts in. It is
// independent of where the visit sits among its siblings, of the order
// visits finish in and of the run: map items are told apart by what they
// receive, not by their index; a loop's iterations and a sweep's repeats
// are distinct samples, so their numbers are part of it.
func (n *Node) Key(in KeyInput) VisitKey {
	k := n.key
	if k == nil { // a node made by hand, not loaded
		computeStatic("", n)
		k = n.key
	}
	prompt := in.Prompt
	roots := slices.DeleteFunc(ordered.Keys(in.Roots), func(root string) bool { return root == "" })
	// The longest first: the run directory before the run id in it.
	sort.Slice(roots, func(i, j int) bool {
		return len(roots[i]) > len(roots[j]) || len(roots[i]) == len(roots[j]) && roots[i] < roots[j]
	})
	for _, root := range roots {
		prompt = strings.ReplaceAll(prompt, root, in.Roots[root])
	}
	parts := map[string]string{KeyNode: k.node, KeySchema: k.schema}
	if n.Agent() != nil {
		parts[KeyAgent], parts[KeyDriver], parts[KeyTools] = k.agent, k.driver, k.tools
		parts[KeyModel] = hashOf(in.Model)
		parts[KeyPrompt] = hashOf(prompt)
		if in.Chain != "" {
			parts[KeyMemory] = in.Chain
		}
	}
	if it := iterations(in.Path); it != "" {
		parts[KeyIteration] = hashOf(it)
	}
	if len(in.Argv) > 0 || in.Script != "" || len(in.Env) > 0 {
		parts[KeyCommand] = hashOf([]any{in.Argv, in.Script, in.Env})
	}
	if in.Workdir != "" {
		parts[KeyWorkdir] = hashOf(in.Workdir)
	}
	if in.Repeat > 1 {
		parts[KeyRepeat] = hashOf(in.Repeat)
	}
	var b strings.Builder
	for _, p := range KeyOrder {
		if h, ok := parts[p]; ok {
			b.WriteString(p)
			b.WriteByte('=')
			b.WriteString(h)
			b.WriteByte('\n')
		}
	}
	s := sha256.Sum256([]byte(b.String()))
	vk := VisitKey{Key: hex.EncodeToString(s[:]), Parts: parts}
	if n.Agent() != nil {
		vk.Prompt = prompt
	}
	return vk
}

// Chain is the memory chain after a visit of key: the next visit of the
// same scope continues a session that saw this one.
func Chain(prev, key string) string {
	s := sha256.Sum256([]byte(prev + "\n" + key))
	return hex.EncodeToString(s[:])
}

// iterations is the loop iterations of a visit path ("fix#2/check[3]#1/x"
// gives "2/1"): a map's item index ("[3]") is left out, since items are
// told apart by what they receive.
func iterations(path string) string {
	var its []string
	for i := 0; i < len(path); i++ {
		if path[i] != '#' {
			continue
		}
		j := i + 1
		for j < len(path) && path[j] >= '0' && path[j] <= '9' {
			j++
		}
		if _, err := strconv.Atoi(path[i+1 : j]); err == nil {
			its = append(its, path[i+1:j])
		}
		i = j - 1
	}
	return strings.Join(its, "/")
}

// computeKeys fills the static key of every node of the plan.
func (p *Plan) computeKeys() {
	for _, name := range ordered.Keys(p.Flows) {
		EachNode(p.Flows[name].Nodes, func(n *Node) { computeStatic(name, n) })
	}
}

// agentParts are what of an agent a visit key hashes: the native driver's
// max_steps and sandbox only when set, so that the keys of agents that do
// not say them stay what they were.
func agentParts(a *Agent) []any {
	parts := []any{a.Name, a.Model, a.Thinking, a.Command, a.BaseURL, a.APIKeyEnv, a.Instructions}
	if a.MaxSteps != 0 || a.Sandbox != "" {
		parts = append(parts, a.MaxSteps, a.Sandbox)
	}
	return parts
}
