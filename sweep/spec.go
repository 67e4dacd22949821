package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// Overrides are the grid as the command line gives it; each field left
// zero takes the flow's `sweep:` section instead.
type Overrides struct {
	Models   []string
	Assign   []flows.Assign
	Tasks    []Task // nil: the flow's sweep.inputs, else one task with no input
	Params   []flows.Param
	Repeat   int // 0: the flow's, else 1
	Baseline string
}

// SpecFor makes the grid of a sweep of plan: the command line's overrides,
// and the flow's sweep: section for what they leave out. The flow's
// baseline holds only for the flow's own assignments.
func SpecFor(plan *flows.Plan, o Overrides) (Spec, error) {
	declared := plan.Root.Sweep
	if declared == nil {
		declared = &flows.Sweep{}
	}
	spec := Spec{Models: declared.Models, Assign: declared.Assign, Params: declared.Params, Repeat: max(declared.Repeat, 1), Baseline: declared.Baseline}
	if len(o.Models) > 0 || len(o.Assign) > 0 {
		spec.Models, spec.Assign, spec.Baseline = o.Models, o.Assign, ""
	}
	if o.Baseline != "" {
		spec.Baseline = o.Baseline
	}
	for _, as := range spec.Assign {
		if plan.Agents[as.Agent] == nil {
			return spec, fmt.Errorf("--assign %s: the flow runs no agent %q (it runs %s)", as.Agent, as.Agent, strings.Join(agentNames(plan), ", "))
		}
	}
	if len(o.Params) > 0 {
		if in := plan.Root.Input; in == nil || in.Kind != schema.TObject {
			return spec, fmt.Errorf("--param sweeps fields of the input, and flow %s takes no object input", plan.Root.Name)
		}
		spec.Params = o.Params
	}
	if o.Repeat > 0 {
		spec.Repeat = o.Repeat
	}
	tasks, err := declaredTasks(plan, o.Tasks, declared)
	spec.Tasks = tasks
	return spec, err
}

func declaredTasks(plan *flows.Plan, given []Task, declared *flows.Sweep) ([]Task, error) {
	keepID := KeepsID(plan)
	switch {
	case given != nil:
		return given, nil
	case declared.Inputs != "":
		return ReadTasks(declared.Inputs, keepID)
	case declared.HasTasks:
		if len(declared.Tasks) == 0 {
			return nil, errors.New("sweep.inputs lists no task")
		}
		return TasksOf(declared.Tasks, keepID)
	}
	return []Task{{ID: "t1"}}, nil
}

// KeepsID reports whether the flow's input declares an id field, which a
// task's "id" then stays in.
func KeepsID(plan *flows.Plan) bool {
	return plan.Root.Input != nil && plan.Root.Input.Field("id") != nil
}

func agentNames(plan *flows.Plan) []string {
	out := make([]string, 0, len(plan.Agents))
	for name := range plan.Agents {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// checkNames refuses a name the reports could not show as one: a model,
// an agent, a swept field or value, a task id or the baseline holding a
// newline or another control character (a line of report.md, a cell of
// report.csv would break at it).
func (s Spec) checkNames() error {
	check := func(what, name string) error {
		if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
			return fmt.Errorf("%s %q holds a control character (%U): names in a sweep are shown in its reports, one line each", what, name, []rune(name[i:])[0])
		}
		return nil
	}
	var errs []error
	for _, m := range s.Models {
		errs = append(errs, check("model", m))
	}
	for _, as := range s.Assign {
		errs = append(errs, check("agent", as.Agent))
		for _, m := range as.Models {
			errs = append(errs, check("model", m))
		}
	}
	for _, p := range s.Params {
		errs = append(errs, check("parameter", p.Key))
		for _, v := range p.Values {
			if str, ok := v.(string); ok {
				errs = append(errs, check("value of "+p.Key, str))
			}
		}
	}
	for _, t := range s.Tasks {
		errs = append(errs, check("task id", t.ID))
	}
	errs = append(errs, check("baseline", s.Baseline))
	return errors.Join(errs...)
}
