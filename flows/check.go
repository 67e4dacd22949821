package flows

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/flowrun/flow/schema"
)

// checker compiles one flow file's nodes, tracking lexical scope.
type checker struct {
	loader *loader
	flow   *Flow
	cat    *Catalogue
	diags  *schema.Diagnostics
	ids    map[string]schema.Pos
	exprs  compiler
}

// reserved ids would shadow names every expression can see.
var reserved = []string{"input", "item", "index", "true", "false", "nil", "in", "not", "and", "or",
	"matches", "contains", "startsWith", "endsWith", "let", "len", "all", "any", "none", "one",
	"filter", "map", "count", "env", "flow"}

// sequence compiles nodes in order; each sees the ones before it.
// ancestors are the enclosing nodes, outermost first (for memory scopes).
func (c *checker) sequence(docs []*schema.Node, sc *scope, ancestors []*schema.Node) []*Node {
	out := make([]*Node, 0, len(docs))
	for _, d := range docs {
		n := c.node(d, sc, ancestors)
		out = append(out, n)
		if d.ID.Set() {
			sc = sc.with(d.ID.Value, n.ValueType())
		}
	}
	return out
}

func (c *checker) node(d *schema.Node, sc *scope, ancestors []*schema.Node) *Node {
	n := &Node{ID: d.ID.Value, Kind: d.Kind, Pos: d.Pos, Doc: d, Budget: budget(d.Budget),
		Continue: d.OnFail.Value == "continue", Timeout: d.Timeout.Value, Output: schema.AnyType}
	if d.ID.Set() {
		if prev, dup := c.ids[d.ID.Value]; dup {
			c.diags.Add(d.ID.Pos, schema.CodeDuplicateID, "ids are unique in a file; rename one", "id %q is used already at line %d", d.ID.Value, prev.Line)
		} else {
			c.ids[d.ID.Value] = d.ID.Pos
		}
		for _, r := range reserved {
			if r == d.ID.Value {
				c.diags.Add(d.ID.Pos, schema.CodeReservedID, "choose another id", "id %q is reserved: expressions use it", d.ID.Value)
			}
		}
	}
	inner := append(append([]*schema.Node{}, ancestors...), d)
	c.isolation(n, d, sc, ancestors)
	switch ds := d.Spec.(type) {
	case *schema.AgentSpec:
		c.agentNode(n, d, ds, sc, ancestors)
	case *schema.RunSpec:
		rn := &RunNode{Sandbox: ds.Sandbox.Value == "on"}
		n.Spec, n.Output = rn, RunOutput
		if ds.Script.Set() {
			rn.Script = c.script(ds.Script, ds.Env, sc)
		}
		for _, a := range ds.Argv {
			rn.Argv = append(rn.Argv, c.template(a, sc))
		}
		c.argvShell(ds.Argv, rn.Argv)
		for _, e := range ds.Env {
			rn.Env = append(rn.Env, EnvVar{Name: e.Name, Value: c.template(e.Value, sc)})
		}
	case *schema.ChoiceSpec:
		cn := &ChoiceNode{}
		n.Spec = cn
		var outs []*schema.Type
		for i, b := range ds.Branches {
			br := &Branch{Else: b.Else}
			if b.Else && i != len(ds.Branches)-1 {
				c.diags.Add(b.Pos, schema.CodeBranch, "move else to the end: branches are tried in order", "else must be the last branch")
			}
			if !b.Else && b.When.Set() {
				br.When = c.compile(b.When, b.When.Value, 0, sc, schema.BooleanType)
			}
			br.Nodes = c.sequence(b.Do, sc, inner)
			outs = append(outs, lastOutput(br.Nodes))
			cn.Branches = append(cn.Branches, br)
		}
		n.Output = common(outs)
	case *schema.ParallelSpec:
		pn := &ParallelNode{FailFast: ds.FailFast.Value}
		n.Spec = pn
		t := &schema.Type{Kind: schema.TObject}
		for _, b := range ds.Branches {
			br := &Branch{Name: b.Name.Value, Nodes: c.sequence(b.Do, sc, inner)}
			pn.Branches = append(pn.Branches, br)
			t.Fields = append(t.Fields, schema.F(br.Name, lastOutput(br.Nodes)))
		}
		n.Output = t
	case *schema.MapSpec:
		mn := &MapNode{FailFast: ds.FailFast.Value, Max: ds.Max.Value, Concurrency: max(ds.Concurrency.Value, 1)}
		n.Spec = mn
		itemT := schema.AnyType
		if ds.Items.Set() {
			mn.Items = c.compile(ds.Items, ds.Items.Value, 0, sc, nil)
			if mn.Items != nil {
				switch t := c.addressType(ds.Items.Value, sc, mn.Items.Type); t.Kind {
				case schema.TList:
					itemT = t.Elem
				case schema.TAny:
				default:
					c.diags.Add(ds.Items.Pos, schema.CodeType, "map over an expression that yields a list", "map expression yields %s, not a list", t)
				}
			}
		}
		body := c.sequence(ds.Do, sc.with("item", itemT).with("index", schema.IntegerType), inner)
		mn.Body = body
		n.Output = schema.ListOf(schema.ObjectOf(schema.F("item", itemT), schema.F("ok", schema.BooleanType),
			schema.F("output", lastOutput(body)), schema.F("error", ErrorType)))
	case *schema.LoopSpec:
		ln := &LoopNode{Max: ds.Max.Value}
		n.Spec = ln
		prev := &schema.Type{Kind: schema.TObject}
		for _, b := range ds.Do {
			if b.ID.Set() {
				prev.Fields = append(prev.Fields, schema.F(b.ID.Value, docValueType(b)))
			}
		}
		loopVar := schema.ObjectOf(schema.F("previous", prev), schema.F("iteration", schema.IntegerType))
		bodyScope := sc
		if d.ID.Set() {
			bodyScope = sc.with(d.ID.Value, loopVar)
		}
		ln.Body = c.sequence(ds.Do, bodyScope, inner)
		if ds.Until.Set() {
			untilScope := bodyScope
			for _, b := range ln.Body {
				untilScope = untilScope.with(b.ID, b.ValueType())
			}
			ln.Until = c.compile(ds.Until, ds.Until.Value, 0, untilScope, schema.BooleanType)
		}
		n.Output = loopOutput(prev)
	case *schema.CallSpec:
		fn := &CallNode{}
		n.Spec = fn
		if ds.Input.Set() {
			fn.Input = c.compile(ds.Input, ds.Input.Value, 0, sc, nil)
		}
		if ds.Flow.Set() {
			fn.Callee = ds.Flow.Value
			if callee := c.loader.callee(c.flow, ds.Flow); callee != nil && callee.Output != nil {
				n.Output = callee.Output
				if callee.Input != nil && callee.Input.Kind != schema.TAny && !ds.Input.Set() && hasRequired(callee.Input) {
					c.diags.Add(d.KindPos, schema.CodeInput, "add input: <an expression giving the callee's input>", "flow %q needs an input", callee.Name)
				}
			}
		}
	case *schema.AskSpec:
		an := &AskNode{Question: ds.Ask.Value}
		n.Spec, n.Output = an, schema.StringType
		if ds.Ask.Set() {
			an.Ask = c.template(ds.Ask, sc)
		}
		for _, a := range ds.Show {
			if !addressRE().MatchString(a.Value) || !isNodeAddress(a.Value, sc) {
				c.diags.Add(a.Pos, schema.CodeReads, "show names nodes that ran before the ask: "+strings.Join(nodeIDs(sc), ", "), "show %q is not a node before this ask", a.Value)
				continue
			}
			if e := c.compile(a, a.Value, 0, sc, nil); e != nil {
				an.Show = append(an.Show, &Read{Address: a.Value, Expr: e, IsNode: true})
			}
		}
		for _, o := range ds.Options {
			an.Options = append(an.Options, o.Value)
		}
		an.Default, an.HasDefault = ds.Default.Value, ds.Default.Set()
	case *schema.WaitSpec:
		c.waitNode(n, ds, sc)
	}
	c.isolates(n, d, ancestors)
	n.Reuse = d.Reuse.Value
	return n
}

func (c *checker) agentNode(n *Node, _ *schema.Node, d *schema.AgentSpec, sc *scope, ancestors []*schema.Node) {
	an := &AgentNode{}
	n.Spec, n.Output = an, schema.StringType
	if d.Output != nil {
		n.Output, an.Typed = d.Output, true
		//workflowcheck:ignore encoding/json sorts map keys; the checker reaches the GC's start through reflect
		an.OutputSchema, _ = json.Marshal(d.Output.JSONSchema())
	}
	an.Retry = d.Retry.Value
	switch {
	case d.InlineAgent != nil:
		c.loader.opts.checkDriver(d.InlineAgent, c.diags)
		an.Agent = agentFromDoc(d.InlineAgent, "inline", c.flow.File, c.loader.opts.DefaultDriver)
		c.loader.opts.checkTools(d.InlineAgent, an.Agent.Driver, c.diags)
	case d.Agent.Set():
		an.Agent = c.cat.Lookup(d.Agent.Value)
		if an.Agent == nil {
			c.unknownAgent(d.Agent)
		}
	}
	if an.Agent != nil {
		c.loader.plan.Agents[an.Agent.Name] = an.Agent
		if !c.loader.opts.knowsDriver(an.Agent.Driver) {
			c.diags.Add(d.Agent.Pos, schema.CodeDriver, "set driver: in the agent file, or a default driver in the configuration", "agent %q has driver %q, which flow does not know", an.Agent.Name, an.Agent.Driver)
		}
	}
	c.delegation(n, an, d)
	if d.Prompt.Set() {
		an.Prompt = c.template(d.Prompt, sc)
	}
	for _, r := range d.Reads {
		rd := &Read{Address: r.Value, IsNode: isNodeAddress(r.Value, sc)}
		if !addressRE().MatchString(r.Value) {
			c.diags.Add(r.Pos, schema.CodeReads, "reads are addresses: input, a node id, x.output.field, loop.previous.id", "%q is not an address", r.Value)
			continue
		}
		rd.Expr = c.compile(r, r.Value, 0, sc, nil)
		an.Reads = append(an.Reads, rd)
	}
	if d.Memory.Set() {
		an.Memory = d.Memory.Value
		ok := an.Memory == "flow"
		var ids []string
		for _, a := range ancestors {
			ids = append(ids, a.ID.Value)
			ok = ok || a.ID.Value == an.Memory
		}
		if !ok {
			hint := "memory names an enclosing node (" + strings.Join(append(ids, "flow"), ", ") + ")"
			c.diags.Add(d.Memory.Pos, schema.CodeMemory, hint, "memory %q is not flow or an enclosing node", an.Memory)
		}
	}
}

func (c *checker) unknownAgent(name schema.String) {
	var names []string
	for _, a := range c.cat.Agents() {
		names = append(names, a.Name)
	}
	if ds, ok := c.cat.broken[name.Value]; ok {
		*c.diags = append(*c.diags, ds...)
		// The file's own errors sort by its path, before or after this one.
		c.diags.Add(name.Pos, schema.CodeAgent, "fix "+ds[0].Pos.File+" (see its errors)", "agent %q could not be read", name.Value)
		return
	}
	hint := schema.DidYouMean(name.Value, names)
	switch {
	case len(names) == 0:
		hint = "no agents were found; list agent directories under agents:, or see `flow agents`"
	case hint == "":
		hint = "known agents: " + strings.Join(names, ", ")
	default:
		hint += " (known agents: " + strings.Join(names, ", ") + ")"
	}
	c.diags.Add(name.Pos, schema.CodeAgent, hint, "unknown agent %q", name.Value)
}

var addressRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
})

// isNodeAddress reports whether addr names a node value: an id in scope, or
// <loop>.previous.<id>.
func isNodeAddress(addr string, sc *scope) bool {
	parts := strings.Split(addr, ".")
	switch {
	case len(parts) == 1:
		t, ok := sc.lookup(parts[0])
		return ok && parts[0] != "input" && parts[0] != "item" && parts[0] != "index" && t.Field("ok") != nil
	case len(parts) == 3 && parts[1] == "previous":
		return true
	}
	return false
}

// addressType resolves the static type of a plain address (a.b.c) by walking
// declared types; other expressions fall back to what expr inferred.
func (c *checker) addressType(src string, sc *scope, inferred *schema.Type) *schema.Type {
	src = strings.TrimSpace(src)
	if !addressRE().MatchString(src) {
		return inferred
	}
	parts := strings.Split(src, ".")
	t, ok := sc.lookup(parts[0])
	if !ok {
		return inferred
	}
	for _, p := range parts[1:] {
		if t.Kind != schema.TObject {
			return inferred
		}
		f := t.Field(p)
		if f == nil {
			return inferred
		}
		t = f.Type
	}
	return t
}

// docValueType is the value type of a node from its document alone.
func docValueType(d *schema.Node) *schema.Type {
	if !d.Isolation.Set() {
		return NodeValueType(docOutput(d))
	}
	var names []string
	if ps, ok := d.Spec.(*schema.ParallelSpec); ok {
		for _, b := range ps.Branches {
			names = append(names, b.Name.Value)
		}
	}
	return isolatedValueType(d.Kind, docOutput(d), names)
}

// docOutput is the output type of a node from its document alone, used for
// `<loop>.previous` before the body is compiled.
func docOutput(d *schema.Node) *schema.Type {
	switch ds := d.Spec.(type) {
	case *schema.AgentSpec:
		if ds.Output != nil {
			return ds.Output
		}
		return schema.StringType
	case *schema.RunSpec:
		return RunOutput
	case *schema.AskSpec:
		return schema.StringType
	case *schema.WaitSpec:
		return waitOutput(ds)
	case *schema.LoopSpec:
		prev := &schema.Type{Kind: schema.TObject}
		for _, b := range ds.Do {
			prev.Fields = append(prev.Fields, schema.F(b.ID.Value, docValueType(b)))
		}
		return loopOutput(prev)
	case *schema.ParallelSpec:
		t := &schema.Type{Kind: schema.TObject}
		for _, b := range ds.Branches {
			var last *schema.Type = schema.AnyType
			if len(b.Do) > 0 {
				last = docOutput(b.Do[len(b.Do)-1])
			}
			t.Fields = append(t.Fields, schema.F(b.Name.Value, last))
		}
		return t
	}
	return schema.AnyType
}

func loopOutput(last *schema.Type) *schema.Type {
	return schema.ObjectOf(schema.F("converged", schema.BooleanType), schema.F("stop", schema.StringType),
		schema.F("iterations", schema.IntegerType), schema.F("last", last))
}

func lastOutput(nodes []*Node) *schema.Type {
	if len(nodes) == 0 {
		return schema.AnyType
	}
	return nodes[len(nodes)-1].Output
}

// common is the one type all of ts share, else any.
func common(ts []*schema.Type) *schema.Type {
	if len(ts) == 0 {
		return schema.AnyType
	}
	for _, t := range ts[1:] {
		if t.String() != ts[0].String() {
			return schema.AnyType
		}
	}
	return ts[0]
}

func hasRequired(t *schema.Type) bool {
	if t.Kind != schema.TObject {
		return !t.HasDefault
	}
	for _, f := range t.Fields {
		if !f.Optional && !f.Type.HasDefault {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// noCost lists the drivers whose agents report no cost.
var noCost = []string{"openai", "codex"}

// costWarnings warns where a cost budget bounds an agent whose driver
// reports no cost: costs are counted only where reported (docs/resume-and-budgets.md, Budgets).
func (c *checker) costWarnings(nodes []*Node, underCost bool) {
	for _, n := range nodes {
		under := underCost || (n.Budget != nil && n.Budget.Cost > 0)
		if an := n.AsAgent(); under && an != nil && an.Agent != nil && contains(noCost, an.Agent.Driver) {
			c.diags.Warn(n.Pos, schema.CodeBudget, "bound it by tokens: too, which this driver reports",
				"agent %q uses driver %s, which reports no cost: the cost budget cannot bound it", an.Agent.Name, an.Agent.Driver)
		}
		for _, b := range n.Branches() {
			c.costWarnings(b.Nodes, under)
		}
		c.costWarnings(n.Body(), under)
	}
}

// nodeIDs lists the node ids in scope, nearest first, for a hint.
func nodeIDs(sc *scope) []string {
	var ids []string
	seen := map[string]bool{}
	for _, name := range sc.names() {
		if !seen[name] && isNodeAddress(name, sc) {
			seen[name] = true
			ids = append(ids, name)
		}
	}
	if len(ids) == 0 {
		return []string{"(none yet)"}
	}
	return ids
}
