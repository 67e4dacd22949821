package flows

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// Sweep is a flow's compiled `sweep:` section (docs/sweeps.md): the grid that
// `flow sweep FILE` runs when the command line gives none, and the score.
type Sweep struct {
	Models []string // every agent on each of these in turn
	Assign []Assign // per agent, its models; the grid is the product
	// Inputs is the JSON Lines file of tasks, joined to the flow file's
	// directory; Tasks are tasks given inline (HasTasks).
	Inputs   string
	Tasks    []any
	HasTasks bool
	Params   []Param
	Repeat   int // 0: not set
	Score    *Score
	Baseline string
}

// Assign is one agent's models in a sweep.
type Assign struct {
	Agent  string   `json:"agent"`
	Models []string `json:"models"`
}

// Param is one input field a sweep gives each of Values in turn.
type Param struct {
	Key    string `json:"key"`
	Values []any  `json:"values"`
}

// Score is a compiled `sweep.score`: an expression over the run's input
// and top-level nodes by id (x.ok, x.output, …), as the nodes after the
// last one would see them. It is checked against types at load time like
// any guard, and gives a boolean or a number.
type Score struct {
	*Expr
	// types is the type of each name the score may read, to convert
	// values read back from JSON to what the program was checked against.
	types map[string]*schema.Type
}

// Eval evaluates the score over a run's top-level values (what
// rundir.ReadValues returns). A boolean is success itself (score 1 or 0);
// a number must lie in [0, 1] and is the score, and success is left to the
// run (numeric reports false).
func (s *Score) Eval(values map[string]any) (score float64, numeric bool, err error) {
	env := make(map[string]any, len(s.types))
	for name, t := range s.types {
		env[name] = t.Normalize(values[name])
	}
	out, err := expr.Run(s.Program, env)
	if err != nil {
		return 0, false, fmt.Errorf("evaluating sweep.score %s: %w", s.Source, err)
	}
	switch v := out.(type) {
	case bool:
		if v {
			return 1, false, nil
		}
		return 0, false, nil
	case int:
		score = float64(v)
	case int64:
		score = float64(v)
	case float64:
		score = v
	default:
		return 0, false, fmt.Errorf("sweep.score %s gave %s, not a boolean or a number", s.Source, schema.KindOf(out))
	}
	if score < 0 || score > 1 {
		return 0, true, fmt.Errorf("sweep.score %s gave %v, outside [0, 1]", s.Source, score)
	}
	return score, true, nil
}

// Label is an assignment as a person writes it: a model for every agent
// and agent=model pairs, separated by spaces or commas, e.g. "alpha",
// "coder=a reviewer=c" or "alpha coder=a". It names a sweep's baseline.
type Label struct {
	Model  string            // every agent's model, "" if none
	Agents map[string]string // per agent
}

// ParseLabel reads an assignment label.
func ParseLabel(s string) (Label, error) {
	l := Label{Agents: map[string]string{}}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
		agent, model, ok := strings.Cut(tok, "=")
		switch {
		case !ok && l.Model != "":
			return Label{}, fmt.Errorf("%q names two models for every agent (%s, %s)", s, l.Model, tok)
		case !ok:
			l.Model = tok
		case agent == "" || model == "":
			return Label{}, fmt.Errorf("%q: write agent=model", tok)
		default:
			l.Agents[agent] = model
		}
	}
	if l.Model == "" && len(l.Agents) == 0 {
		return Label{}, errors.New("an empty assignment")
	}
	return l, nil
}

// String writes the label back in its canonical form: the model, then
// agent=model pairs in agent order.
func (l Label) String() string {
	var parts []string
	if l.Model != "" {
		parts = append(parts, l.Model)
	}
	for _, a := range ordered.Keys(l.Agents) {
		parts = append(parts, a+"="+l.Agents[a])
	}
	return strings.Join(parts, " ")
}

// models compiles the flow's `models:` against the agents its nodes, and
// the flows it calls, run.
func (c *checker) models(pins []schema.ModelPin, used []string) map[string]string {
	if len(pins) == 0 {
		return nil
	}
	out := make(map[string]string, len(pins))
	for _, p := range pins {
		if c.checkUsed(p.Agent, used, "models") && p.Model.Set() {
			out[p.Agent.Value] = p.Model.Value
		}
	}
	return out
}

// checkUsed reports whether an agent named under key is one the flow runs,
// and says so where it is not.
func (c *checker) checkUsed(agent schema.String, used []string, key string) bool {
	if slices.Contains(used, agent.Value) {
		return true
	}
	hint := schema.DidYouMean(agent.Value, used)
	if hint == "" {
		hint = "the flow runs " + strings.Join(used, ", ")
		if len(used) == 0 {
			hint = "the flow runs no agent"
		}
	}
	c.diags.Add(agent.Pos, schema.CodeAgent, hint, "%s names agent %q, which no node of this flow or of a flow it calls runs", key, agent.Value)
	return false
}

// sweep compiles the flow's `sweep:`; the score sees the input and the
// flow's top-level nodes.
func (c *checker) sweep(d *schema.Sweep, used []string, inputT *schema.Type) *Sweep {
	if d == nil {
		return nil
	}
	s := &Sweep{Repeat: d.Repeat.Value, Tasks: d.Tasks, HasTasks: d.HasTasks, Baseline: d.Baseline.Value}
	for _, m := range d.Models {
		if m.Set() {
			s.Models = append(s.Models, m.Value)
		}
	}
	for _, a := range d.Assign {
		if !c.checkUsed(a.Agent, used, "sweep.assign") {
			continue
		}
		as := Assign{Agent: a.Agent.Value}
		for _, m := range a.Models {
			if m.Set() {
				as.Models = append(as.Models, m.Value)
			}
		}
		if len(as.Models) == 0 {
			c.diags.Add(a.Agent.Pos, schema.CodeEmpty, "list its models: "+as.Agent+": [m1, m2]", "sweep.assign.%s has no models", as.Agent)
			continue
		}
		s.Assign = append(s.Assign, as)
	}
	for _, p := range d.Params {
		s.Params = append(s.Params, Param{Key: p.Key.Value, Values: p.Values})
	}
	if d.Inputs.Set() {
		s.Inputs = d.Inputs.Value
		if !filepath.IsAbs(s.Inputs) {
			s.Inputs = filepath.Join(filepath.Dir(c.flow.File), s.Inputs)
		}
		if _, err := c.loader.opts.disk().Stat(s.Inputs); c.loader.opts.Agents == nil && err != nil {
			c.diags.Add(d.Inputs.Pos, schema.CodeSweep, "sweep.inputs is a JSON Lines file relative to the flow file, one task a line", "sweep.inputs: %s", readError(err))
		}
	}
	if d.Baseline.Set() {
		c.checkBaseline(d.Baseline, s)
	}
	if d.Score.Set() {
		s.Score = c.score(d.Score, inputT)
	}
	return s
}

// checkBaseline holds a baseline to the assignments the sweep declares,
// when it declares any (the command line may give others).
func (c *checker) checkBaseline(b schema.String, s *Sweep) {
	l, err := ParseLabel(b.Value)
	if err != nil {
		c.diags.Add(b.Pos, schema.CodeSweep, "write a model (alpha), agent=model pairs (coder=a reviewer=c), or both", "sweep.baseline: %v", err)
		return
	}
	if len(s.Models) == 0 && len(s.Assign) == 0 {
		return
	}
	var faults []string
	if l.Model != "" && !slices.Contains(s.Models, l.Model) {
		faults = append(faults, fmt.Sprintf("model %q is not in sweep.models", l.Model))
	}
	if l.Model == "" && len(s.Models) > 0 {
		faults = append(faults, "it names none of sweep.models")
	}
	for _, a := range s.Assign {
		m, ok := l.Agents[a.Agent]
		switch {
		case !ok:
			faults = append(faults, "it gives "+a.Agent+" no model")
		case !slices.Contains(a.Models, m):
			faults = append(faults, fmt.Sprintf("%s=%s is not in sweep.assign", a.Agent, m))
		}
	}
	for _, agent := range ordered.Keys(l.Agents) {
		if !slices.ContainsFunc(s.Assign, func(a Assign) bool { return a.Agent == agent }) {
			faults = append(faults, agent+" is not under sweep.assign")
		}
	}
	if len(faults) > 0 {
		slices.Sort(faults)
		c.diags.Add(b.Pos, schema.CodeSweep, "name one of the sweep's assignments", "sweep.baseline %q is not an assignment of the sweep: %s", b.Value, strings.Join(faults, "; "))
	}
}

// score compiles sweep.score against the flow's input and top-level nodes.
func (c *checker) score(src schema.String, inputT *schema.Type) *Score {
	types := map[string]*schema.Type{"input": inputT}
	sc := (*scope)(nil).with("input", inputT)
	for _, n := range c.flow.Nodes {
		if n.ID != "" {
			t := NodeValueType(n.Output)
			types[n.ID] = t
			sc = sc.with(n.ID, t)
		}
	}
	e := c.compile(src, src.Value, 0, sc, nil)
	if e == nil {
		return nil
	}
	switch e.Type.Kind {
	case schema.TBoolean, schema.TInteger, schema.TNumber, schema.TAny:
	default:
		c.diags.Add(src.Pos, schema.CodeSweep, "give a boolean (success) or a number in [0, 1], e.g. review.output.converged && tests.output.passed", "sweep.score gives %s, not a boolean or a number", e.Type)
		return nil
	}
	return &Score{Expr: e, types: types}
}

// usedAgents lists, sorted, the agents that nodes run, in the flows they
// call too.
func (p *Plan) usedAgents(nodes []*Node) []string {
	seen := map[string]bool{}
	called := map[string]bool{}
	var walk func([]*Node)
	walk = func(nodes []*Node) {
		EachNode(nodes, func(n *Node) {
			switch {
			case n.Agent() != nil:
				seen[n.Agent().Name] = true
			case n.AsCall() != nil && !called[n.AsCall().Callee]:
				called[n.AsCall().Callee] = true
				if f := p.Flows[n.AsCall().Callee]; f != nil {
					walk(f.Nodes)
				}
			}
		})
	}
	walk(nodes)
	return ordered.Keys(seen)
}
