package sweep

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

func child(path, agent, model string, tokens int64, c *float64) *record.Fact {
	f := visit("delegate:"+agent, agent, model, tokens, c)
	f.Visit = path
	return f
}

// TestForecastCountsChildren: a delegating node's forecast adds, per
// agent it may start, the children its visits started in each run (a
// child's own children too, a retried child once) times what a turn of
// that agent reported on the model a child resolves to; a child agent on
// a model nothing recorded makes the forecast unknown and is named.
func TestForecastCountsChildren(t *testing.T) {
	plan := loadFlow(t, `name: f
agents:
  - {name: lead, description: d, driver: exec, command: [x]}
  - {name: scout, description: d, driver: exec, command: [x]}
nodes:
  - id: look
    agent: lead
    prompt: p
    delegate: {agents: [scout], max_depth: 2}
`)
	h := NewHistory("f")
	lead := func(c *float64) *record.Fact {
		f := visit("look", "lead", "a", 100, c)
		f.Visit = "look"
		return f
	}
	// Run 1: one scout (retried: two end facts). Run 2: a scout that sent a
	// scout, and another scout: three.
	h.Add([]*record.Fact{child("look/delegate:scout#1", "scout", "a", 400, cost(0.04)), child("look/delegate:scout#1", "scout", "a", 400, cost(0.04)), lead(cost(0.01))})
	h.Add([]*record.Fact{child("look/delegate:scout#1/delegate:scout#1", "scout", "a", 400, cost(0.04)),
		child("look/delegate:scout#1", "scout", "a", 400, cost(0.04)), child("look/delegate:scout#2", "scout", "a", 400, cost(0.04)), lead(cost(0.01))})

	est := flows.Estimate(plan, flows.Settings{Model: "a"})
	cs := h.Children(est.Nodes[0])
	if len(cs) != 1 || cs[0].Agent != "scout" || cs[0].Model != "a" || cs[0].Children != (Range{Known: true, Low: 1, Expected: 2, High: 3}) {
		t.Fatalf("children forecast %+v", cs)
	}
	fc := h.Forecast(est)
	// The lead: 100 a run; its scouts: 1..3 (mean 2) of 400 each.
	if want := (Range{Known: true, Low: 500, Expected: 900, High: 1300}); fc.Tokens != want {
		t.Errorf("tokens forecast %+v, want %+v", fc.Tokens, want)
	}
	// The scouts on another model (a sweep's --assign scout=b): unknown.
	fb := h.Forecast(flows.Estimate(plan, flows.Settings{Model: "a", Models: map[string]string{"scout": "b"}}))
	if fb.Tokens.Known || strings.Join(fb.Missing, ", ") != "scout on b" {
		t.Errorf("forecast with the scout on an unseen model: %+v", fb)
	}
}

// TestOverspendNamesCellsOverTheirForecasts: a sweep that ends over its
// budget because cells spent more than their forecasts reserved says so,
// naming them, and does not blame a cell that started with no forecast.
func TestOverspendNamesCellsOverTheirForecasts(t *testing.T) {
	ended := func(i int, tokens int64, reserved *Budget, unpriced bool) *Cell {
		return &Cell{Index: i, Status: StatusSucceeded, Unpriced: unpriced, Reserved: reserved,
			Outcome: &Outcome{Status: record.StatusSucceeded, Usage: record.Usage{Input: &tokens}}}
	}
	f := &File{ID: "s1", Budget: Budget{Tokens: 6000}, Cells: []*Cell{
		ended(1, 2335, &Budget{Tokens: 467}, false), ended(2, 2335, &Budget{Tokens: 467}, false),
		ended(3, 2335, nil, true), ended(4, 2335, &Budget{Tokens: 467}, false)}}
	os := overspends(f, spentAll(f))
	if len(os) != 1 {
		t.Fatalf("overspends: %+v", os)
	}
	why := os[0].Why
	if strings.Contains(why, "no forecast") || !strings.Contains(why, "cells 1, 2, 4 spent more than their forecasts reserved (cell 1 spent 2335 tokens, forecast 467") {
		t.Errorf("the overspend says: %s", why)
	}
	f.Cells = []*Cell{ended(1, 2335, nil, true), ended(2, 4000, &Budget{Tokens: 4000}, false)}
	if os := overspends(f, spentAll(f)); len(os) != 1 || !strings.Contains(os[0].Why, "cell 1 started with no forecast") {
		t.Errorf("no cell over its forecast, one unpriced: %+v", os)
	}
}
