package schema

import (
	"github.com/goccy/go-yaml/ast"
)

// ModelPin is one entry of a flow's `models:`: the model one agent runs on
// in this flow (docs/flow-files.md, agent). `flow sweep --pin` writes these.
type ModelPin struct {
	Agent String
	Model String
}

// Sweep is a flow's `sweep:` section (docs/sweeps.md): the grid `flow sweep FILE`
// runs when the command line gives none, and what counts as success.
type Sweep struct {
	Pos Pos
	// Models puts every agent on each of these models in turn.
	Models []String
	// Assign gives single agents their own list of models; the grid is the
	// product of the lists.
	Assign []SweepAssign
	// Inputs is a JSON Lines file of tasks, relative to the flow file; or
	// Tasks lists the tasks inline (HasTasks).
	Inputs   String
	Tasks    []any
	HasTasks bool
	// Params sweeps fields of the input over values.
	Params []SweepParam
	Repeat Int
	// Score is an expression over the run's top-level nodes giving a
	// boolean (success) or a number in [0, 1].
	Score String
	// Baseline names the assignment the others are compared with.
	Baseline String
}

// SweepAssign is one agent's models under `sweep.assign`.
type SweepAssign struct {
	Agent  String
	Models []String
}

// SweepParam is one input field swept under `sweep.params`.
type SweepParam struct {
	Key    String
	Values []any
}

// models reads `models: {agent: model, …}`; the agent names are checked
// by the loader, which knows the flow's agents.
func (r *reader) models(n ast.Node) []ModelPin {
	es, ok := r.mapping(n, "models", nil)
	if !ok {
		return nil
	}
	out := make([]ModelPin, 0, len(es))
	for _, e := range es {
		out = append(out, ModelPin{Agent: String{Value: e.key, Pos: r.pos(e.keyN)}, Model: r.str(e.value, "models."+e.key)})
	}
	return out
}

func (r *reader) sweep(n ast.Node) *Sweep {
	es, ok := r.mapping(n, "sweep", sweepKeys)
	if !ok {
		return nil
	}
	s := &Sweep{Pos: r.pos(n)}
	for _, e := range es {
		switch e.key {
		case "models":
			s.Models = r.stringList(e.value, "sweep.models")
		case "assign":
			as, _ := r.mapping(e.value, "sweep.assign", nil)
			for _, a := range as {
				s.Assign = append(s.Assign, SweepAssign{Agent: String{Value: a.key, Pos: r.pos(a.keyN)}, Models: r.stringList(a.value, "sweep.assign."+a.key)})
			}
		case "inputs":
			if isScalar(e.value) {
				s.Inputs = r.str(e.value, "sweep.inputs")
				continue
			}
			items, ok := r.list(e.value, "sweep.inputs")
			if !ok {
				continue
			}
			s.HasTasks = true
			for _, it := range items {
				s.Tasks = append(s.Tasks, r.plainValue(it))
			}
		case "params":
			ps, _ := r.mapping(e.value, "sweep.params", nil)
			for _, p := range ps {
				sp := SweepParam{Key: String{Value: p.key, Pos: r.pos(p.keyN)}}
				if items, ok := r.list(p.value, "sweep.params."+p.key); ok {
					for _, it := range items {
						sp.Values = append(sp.Values, r.plainValue(it))
					}
				}
				if len(sp.Values) == 0 {
					r.errorf(p.keyN, CodeEmpty, "list the values to sweep: "+p.key+": [a, b]", "sweep.params.%s has no values", p.key)
				}
				s.Params = append(s.Params, sp)
			}
		case "repeat":
			s.Repeat = r.integer(e.value, "sweep.repeat", 1)
		case "score":
			s.Score = r.str(e.value, "sweep.score")
		case "baseline":
			s.Baseline = r.str(e.value, "sweep.baseline")
		}
	}
	return s
}

// stringList reads a list of strings, or a single string as a list of one.
func (r *reader) stringList(n ast.Node, what string) []String {
	if isScalar(n) {
		return []String{r.str(n, what)}
	}
	return r.strings(n, what)
}
