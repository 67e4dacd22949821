package sweep

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flowrun/flow/flows"
)

// Spec is the grid a sweep runs (docs/sweeps.md): model assignments (Models puts
// every agent on one model; Assign gives single agents their own lists;
// the assignments are the product), tasks, swept input fields, and
// repetitions.
type Spec struct {
	Models   []string       `json:"models,omitempty"`
	Assign   []flows.Assign `json:"assign,omitempty"`
	Tasks    []Task         `json:"tasks"`
	Params   []flows.Param  `json:"params,omitempty"`
	Repeat   int            `json:"repeat"`
	Baseline string         `json:"baseline,omitempty"` // a label; "" means the first assignment
}

// Task is one input the flow is run on, named for pairing cells across
// assignments.
type Task struct {
	ID    string `json:"id"`
	Input any    `json:"input"`
}

// Assignment is one cell's models: Model for every agent, then Agents for
// single agents. An agent it does not name keeps the model its flow and
// agent file give it.
type Assignment struct {
	Label  string            `json:"label"`
	Model  string            `json:"model,omitempty"`
	Agents map[string]string `json:"agents,omitempty"`
}

// defaultLabel names the one assignment of a sweep that varies no model.
const defaultLabel = "as resolved"

// Settings returns the settings a run of this assignment runs with: base
// (--timeout, the configured turn timeout) with the assignment's models,
// which win over every model a flow or agent file pins (docs/flow-files.md, agent).
func (a Assignment) Settings(base flows.Settings) flows.Settings {
	base.Model = a.Model
	base.Models = a.Agents
	return base
}

// Assignments lists the grid's assignments in order: Models outermost,
// then each agent of Assign in turn.
func (s Spec) Assignments() []Assignment {
	out := []Assignment{{}}
	if len(s.Models) > 0 {
		out = out[:0]
		for _, m := range s.Models {
			out = append(out, Assignment{Model: m})
		}
	}
	for _, as := range s.Assign {
		var next []Assignment
		for _, a := range out {
			for _, m := range as.Models {
				agents := maps.Clone(a.Agents)
				if agents == nil {
					agents = map[string]string{}
				}
				agents[as.Agent] = m
				next = append(next, Assignment{Model: a.Model, Agents: agents})
			}
		}
		out = next
	}
	for i := range out {
		out[i].Label = flows.Label{Model: out[i].Model, Agents: out[i].Agents}.String()
		if out[i].Label == "" {
			out[i].Label = defaultLabel
		}
	}
	return out
}

// ParamSet is one combination of the swept input fields.
type ParamSet struct {
	Label  string         `json:"label"` // "level=1 lang=go"; "" when nothing is swept
	Values map[string]any `json:"values,omitempty"`
}

// ParamSets lists the combinations of the swept fields, the first field
// outermost; one empty set when nothing is swept.
func (s Spec) ParamSets() []ParamSet {
	out := []ParamSet{{}}
	for _, p := range s.Params {
		var next []ParamSet
		for _, ps := range out {
			for _, v := range p.Values {
				values := maps.Clone(ps.Values)
				if values == nil {
					values = map[string]any{}
				}
				values[p.Key] = v
				label := strings.TrimSpace(ps.Label + " " + p.Key + "=" + valueText(v))
				next = append(next, ParamSet{Label: label, Values: values})
			}
		}
		out = next
	}
	return out
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// cells lays the grid out in run order, model-major: every cell of the
// first assignment, then the next; within one, parameter sets, then
// tasks, then repetitions.
func (s Spec) cells() ([]*Cell, error) {
	var out []*Cell
	for _, a := range s.Assignments() {
		for _, ps := range s.ParamSets() {
			for _, t := range s.Tasks {
				input, err := withParams(t.Input, ps.Values)
				if err != nil {
					return nil, fmt.Errorf("task %s: %w", t.ID, err)
				}
				for r := 1; r <= max(s.Repeat, 1); r++ {
					out = append(out, &Cell{Index: len(out) + 1, Assignment: a.Label, Params: ps.Label, Task: t.ID,
						Repeat: r, Input: input, Status: StatusPending})
				}
			}
		}
	}
	return out, nil
}

// withParams sets the swept fields on a task's input, an object.
func withParams(input any, params map[string]any) (any, error) {
	if len(params) == 0 {
		return input, nil
	}
	m, ok := input.(map[string]any)
	if input != nil && !ok {
		return nil, fmt.Errorf("swept fields (%s) need an object input, not %s", strings.Join(slices.Sorted(maps.Keys(params)), ", "), valueText(input))
	}
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, params)
	return out, nil
}

// baseline finds the assignment a label names (in any order of its
// parts), or the first assignment for "".
func baseline(as []Assignment, label string) (Assignment, error) {
	if label == "" {
		return as[0], nil
	}
	l, err := flows.ParseLabel(label)
	if err != nil {
		return Assignment{}, fmt.Errorf("--baseline: %w", err)
	}
	want := l.String()
	labels := make([]string, len(as))
	for i, a := range as {
		if a.Label == want {
			return a, nil
		}
		labels[i] = a.Label
	}
	return Assignment{}, fmt.Errorf("--baseline %q is not an assignment of the sweep (%s)", label, strings.Join(labels, "; "))
}
