package sweep

import (
	"slices"
	"testing"

	"github.com/flowrun/flow/flows"
)

func TestAssignmentsAreTheProduct(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"nothing varies", Spec{}, []string{defaultLabel}},
		{"models", Spec{Models: []string{"a", "b"}}, []string{"a", "b"}},
		{"two agents", Spec{Assign: []flows.Assign{{Agent: "coder", Models: []string{"a", "b"}}, {Agent: "reviewer", Models: []string{"c", "d"}}}},
			[]string{"coder=a reviewer=c", "coder=a reviewer=d", "coder=b reviewer=c", "coder=b reviewer=d"}},
		{"models and one agent", Spec{Models: []string{"x", "y"}, Assign: []flows.Assign{{Agent: "coder", Models: []string{"a"}}}},
			[]string{"x coder=a", "y coder=a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range tt.spec.Assignments() {
				got = append(got, a.Label)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("assignments %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAssignmentSettingsOverrideEveryPinnedModel(t *testing.T) {
	a := Spec{Models: []string{"m"}, Assign: []flows.Assign{{Agent: "coder", Models: []string{"c"}}}}.Assignments()[0]
	s := a.Settings(flows.Settings{Model: "ignored", TurnTimeout: 5})
	if s.Model != "m" || s.Models["coder"] != "c" || s.TurnTimeout != 5 {
		t.Errorf("settings %+v", s)
	}
	pinned := &flows.Agent{Name: "reviewer", Model: "pinned"}
	flow := &flows.Flow{Model: "flow-model", Models: map[string]string{"reviewer": "flow-pin"}}
	if got := s.ResolveModel(&flows.Calls{Flow: flow}, pinned); got != "m" {
		t.Errorf("a pinned agent resolved to %q in a cell of model m", got)
	}
}

func TestCellsRunModelMajor(t *testing.T) {
	spec := Spec{Models: []string{"a", "b"}, Tasks: []Task{{ID: "t1", Input: map[string]any{"q": 1}}, {ID: "t2", Input: map[string]any{"q": 2}}},
		Params: []flows.Param{{Key: "level", Values: []any{1, "hi"}}}, Repeat: 2}
	cells, err := spec.cells()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2*2*2*2 {
		t.Fatalf("%d cells", len(cells))
	}
	var order []string
	for _, c := range cells[:5] {
		order = append(order, c.Assignment+"/"+c.Params+"/"+c.Task+"/"+string(rune('0'+c.Repeat)))
	}
	want := []string{"a/level=1/t1/1", "a/level=1/t1/2", "a/level=1/t2/1", "a/level=1/t2/2", "a/level=hi/t1/1"}
	if !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if cells[8].Assignment != "b" || cells[8].Index != 9 {
		t.Errorf("cell 9: %+v", cells[8])
	}
	in := cells[4].Input.(map[string]any)
	if in["q"] != 1 || in["level"] != "hi" {
		t.Errorf("input with params: %v", in)
	}
	if _, err := (Spec{Tasks: []Task{{ID: "t1", Input: "text"}}, Params: spec.Params}).cells(); err == nil {
		t.Error("params on a string input were accepted")
	}
}

func TestTaskOf(t *testing.T) {
	tests := []struct {
		v      any
		keepID bool
		id     string
		input  any
	}{
		{"plain text", false, "t3", "plain text"},
		{map[string]any{"id": "add", "input": map[string]any{"q": 1.0}}, false, "add", map[string]any{"q": 1.0}},
		{map[string]any{"id": 7.0, "q": 1.0}, false, "7", map[string]any{"q": 1.0}},
		{map[string]any{"id": "x", "q": 1.0}, true, "x", map[string]any{"id": "x", "q": 1.0}},
		{map[string]any{"q": 1.0}, false, "t3", map[string]any{"q": 1.0}},
	}
	for _, tt := range tests {
		got := TaskOf(tt.v, 3, tt.keepID)
		if got.ID != tt.id || valueText(got.Input) != valueText(tt.input) {
			t.Errorf("TaskOf(%v) = %+v, want id %s input %v", tt.v, got, tt.id, tt.input)
		}
	}
	if _, err := TasksOf([]any{map[string]any{"id": "a"}, map[string]any{"id": "a"}}, false); err == nil {
		t.Error("two tasks with one id were accepted")
	}
}

func TestBaseline(t *testing.T) {
	as := Spec{Assign: []flows.Assign{{Agent: "coder", Models: []string{"a", "b"}}, {Agent: "reviewer", Models: []string{"c"}}}}.Assignments()
	if b, err := baseline(as, ""); err != nil || b.Label != "coder=a reviewer=c" {
		t.Errorf("default baseline %v %v", b, err)
	}
	if b, err := baseline(as, "reviewer=c, coder=b"); err != nil || b.Label != "coder=b reviewer=c" {
		t.Errorf("named baseline %v %v", b, err)
	}
	if _, err := baseline(as, "coder=z reviewer=c"); err == nil {
		t.Error("a baseline outside the grid was accepted")
	}
}

// Cells that send the same prompt to the same model — the repetitions of
// one task under one assignment and parameter set — run next to each
// other, so the provider's prompt cache is warm (docs/sweeps.md).
func TestCellsSharingAPromptRunTogether(t *testing.T) {
	spec := Spec{Models: []string{"a", "b"}, Tasks: []Task{{ID: "t1"}, {ID: "t2"}}, Repeat: 3}
	cells, err := spec.cells()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]int{} // assignment and task -> the last index
	for i, c := range cells {
		k := [2]string{c.Assignment, c.Task}
		if last, ok := seen[k]; ok && last != i-1 {
			t.Fatalf("cell %d (%s %s #%d) is apart from the earlier cell %d of its prompt", i, c.Assignment, c.Task, c.Repeat, last)
		}
		seen[k] = i
	}
}
