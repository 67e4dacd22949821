package main

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/sweep"
)

// childrenLine says, under a delegating node in `flow plan`, what its
// children are expected to take from the flow's earlier runs: per agent,
// how many children a run had and their tokens and cost — the forecast a
// sweep reserves (docs/delegation.md).
func childrenLine(h *sweep.History) func(*flows.NodeEstimate) string {
	return func(e *flows.NodeEstimate) string {
		if h.Runs() == 0 {
			return "children: no earlier run to forecast them from"
		}
		cs := h.Children(e)
		if len(cs) == 0 {
			return fmt.Sprintf("children from %d earlier run(s): none", h.Runs())
		}
		parts := make([]string, len(cs))
		for i, c := range cs {
			model := c.Model
			if model == "" {
				model = "driver default"
			}
			parts[i] = fmt.Sprintf("%s on %s %s a run, tokens %s, cost %s", c.Agent, model, rangeText(c.Children, "%.3g"),
				rangeText(c.Tokens, "%.0f"), rangeText(c.Cost, "$%.4f"))
		}
		return fmt.Sprintf("children from %d earlier run(s): %s", h.Runs(), strings.Join(parts, "; "))
	}
}

// rangeText is r in format f: one figure when the range is one, else
// low–high with the expected figure; "unknown" when it is.
func rangeText(r sweep.Range, f string) string {
	switch {
	case !r.Known:
		return "unknown"
	case r.Low == r.High:
		return fmt.Sprintf(f, r.Expected)
	}
	return fmt.Sprintf(f+"–"+f+" (expected "+f+")", r.Low, r.High, r.Expected)
}
