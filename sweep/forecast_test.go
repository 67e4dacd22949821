package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

func visit(node, agent, model string, tokens int64, c *float64) *record.Fact {
	ok := true
	return &record.Fact{Type: record.FactEnd, Kind: schema.KindAgent, Node: node, Agent: agent, Model: model, OK: &ok,
		Usage: &record.Usage{Input: &tokens, Cost: c}}
}

func loadFlow(t *testing.T, src string) *flows.Plan {
	t.Helper()
	file := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := flows.Load(file, flows.Options{UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return p
}

func TestForecastFromEarlierRuns(t *testing.T) {
	plan := loadFlow(t, `name: f
agents:
  - {name: coder, description: d, driver: exec, command: [x]}
  - {name: reviewer, description: d, driver: exec, command: [x]}
nodes:
  - id: loop
    loop: {until: "r.ok", max: 3}
    do:
      - {id: c, agent: coder, prompt: p}
      - {id: r, agent: reviewer, prompt: p}
`)
	h := NewHistory("f")
	// Run 1: one pass; run 2: two passes. On model a, a coder turn cost
	// 0.01 then 0.03; a reviewer turn 0.002.
	h.Add([]*record.Fact{visit("c", "coder", "a", 100, cost(0.01)), visit("r", "reviewer", "a", 10, cost(0.002))})
	h.Add([]*record.Fact{visit("c", "coder", "a", 300, cost(0.03)), visit("r", "reviewer", "a", 10, cost(0.002)),
		visit("c", "coder", "a", 300, cost(0.03)), visit("r", "reviewer", "a", 10, cost(0.002))})

	fc := h.Forecast(flows.Estimate(plan, flows.Settings{Model: "a"}))
	// Coder visits: 1..2, mean 1.5; per visit 0.01..0.03, mean 0.07/3.
	// Reviewer visits: 1..2, mean 1.5; per visit 0.002.
	want := Range{Known: true, Low: 0.01 + 0.002, Expected: 1.5*0.07/3 + 1.5*0.002, High: 2*0.03 + 2*0.002}
	if !fc.Cost.Known || !near(fc.Cost.Low, want.Low) || !near(fc.Cost.Expected, want.Expected) || !near(fc.Cost.High, want.High) {
		t.Errorf("cost forecast %+v, want %+v", fc.Cost, want)
	}
	if fc.Turns != 6 {
		t.Errorf("worst case %d turns, want 6", fc.Turns)
	}
	// On model b nothing is known: unknown, never 0.
	fb := h.Forecast(flows.Estimate(plan, flows.Settings{Model: "b"}))
	if fb.Cost.Known || fb.Tokens.Known || strings.Join(fb.Missing, ", ") != "coder on b, reviewer on b" {
		t.Errorf("forecast on an unseen model: %+v", fb)
	}
	if fe := NewHistory("f").Forecast(flows.Estimate(plan, flows.Settings{})); fe.Cost.Known {
		t.Errorf("no history, yet the cost is known: %+v", fe)
	}
}

func TestBudgetRefusesWhatItCannotCover(t *testing.T) {
	known := Forecast{Cost: Range{Known: true, Expected: 0.2}, Tokens: Range{Known: true, Expected: 1000}}
	unknown := Forecast{}
	tests := []struct {
		name            string
		budget          Budget
		fc              Forecast
		spent, reserved Budget
		refused         bool
	}{
		{"covered", Budget{Cost: 0.25}, known, Budget{Cost: 0.04}, Budget{}, false},
		{"not covered", Budget{Cost: 0.25}, known, Budget{Cost: 0.04}, Budget{Cost: 0.02}, true},
		{"tokens not covered", Budget{Tokens: 1500}, known, Budget{Tokens: 600}, Budget{}, true},
		{"unknown with something left", Budget{Cost: 0.25}, unknown, Budget{Cost: 0.2}, Budget{}, false},
		{"unknown with nothing left", Budget{Cost: 0.25}, unknown, Budget{Cost: 0.25}, Budget{}, true},
		{"no budget", Budget{}, known, Budget{Cost: 9}, Budget{}, false},
	}
	for _, tt := range tests {
		if why := tt.budget.refuse(tt.fc, tt.spent, tt.reserved); (why != "") != tt.refused {
			t.Errorf("%s: refused %q", tt.name, why)
		}
	}
}
