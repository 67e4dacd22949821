package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flowrun/flow/engine/record"
)

// spentAll is what every cell that ran spent, stopped cells included:
// the figures its run's journal holds.
func spentAll(f *File) record.Usage {
	var u record.Usage
	for _, c := range f.Cells {
		if c.Outcome != nil {
			u.Add(c.Outcome.Usage)
		}
	}
	return u
}

// overspends says whether the sweep ended above its budget, by how much
// and why, followed by what the cells' own runs overspent
// (docs/sweeps.md). It is made from sweep.json alone, so that every
// report says the same.
func overspends(f *File, spent record.Usage) []record.Overspend {
	var out []record.Overspend
	o := record.Overspend{Budget: "sweep " + f.ID}
	if b := f.Budget.Tokens; b > 0 && spent.Tokens() > b {
		o.Tokens, o.LimitTokens = spent.Tokens()-b, b
	}
	if b := f.Budget.Cost; b > 0 && spent.Cost != nil && *spent.Cost > b {
		o.Cost, o.LimitCost = *spent.Cost-b, b
	}
	if o.LimitTokens > 0 || o.LimitCost > 0 {
		o.Why = "the cells running when the budget ran out spent more than their forecasts (the sweep's budget does not cut a running cell short)"
		over := overForecast(f)
		if over != "" {
			o.Why = over
		}
		for _, c := range f.Cells {
			if over == "" && c.Unpriced && c.Outcome != nil {
				o.Why = fmt.Sprintf("cell %d started with no forecast to reserve (no earlier run had priced it), and the cells running beside it spent more than it left", c.Index)
				break
			}
		}
		out = append(out, o)
	}
	for _, c := range f.Cells {
		if c.Outcome == nil {
			continue
		}
		for _, co := range c.Outcome.Overspend {
			co.Budget = fmt.Sprintf("cell %d (run %s): %s", c.Index, c.Run, co.Budget)
			out = append(out, co)
		}
	}
	return out
}

// overForecast names the cells that spent more than their forecasts
// reserved, with the first one's figures, or "" when none did.
func overForecast(f *File) string {
	var cells []string
	first := ""
	for _, c := range f.Cells {
		if c.Outcome == nil || c.Reserved == nil {
			continue
		}
		u := c.Outcome.Usage
		switch {
		case f.Budget.Tokens > 0 && c.Reserved.Tokens > 0 && u.Tokens() > c.Reserved.Tokens:
			if first == "" {
				first = fmt.Sprintf("cell %d spent %d tokens, forecast %d", c.Index, u.Tokens(), c.Reserved.Tokens)
			}
		case f.Budget.Cost > 0 && c.Reserved.Cost > 0 && u.Cost != nil && *u.Cost > c.Reserved.Cost:
			if first == "" {
				first = fmt.Sprintf("cell %d spent $%.4f, forecast $%.4f", c.Index, *u.Cost, c.Reserved.Cost)
			}
		default:
			continue
		}
		cells = append(cells, strconv.Itoa(c.Index))
	}
	if len(cells) == 0 {
		return ""
	}
	return fmt.Sprintf("cells %s spent more than their forecasts reserved (%s; the sweep's budget does not cut a running cell short)", strings.Join(cells, ", "), first)
}
