package sweep

// The per-node breakdown: which node fails most, which costs most, per
// agent and model.

func nodeRows(as []Assignment, byAssignment map[string][]*Cell) []*NodeRow {
	var out []*NodeRow
	for _, a := range as {
		at := map[[3]string]*NodeRow{}
		var rows []*NodeRow
		for _, c := range byAssignment[a.Label] {
			for _, n := range c.Outcome.Nodes {
				key := [3]string{n.Node, n.Agent, n.Model}
				nr := at[key]
				if nr == nil {
					nr = &NodeRow{Assignment: a.Label, Node: n.Node, Kind: string(n.Kind), Agent: n.Agent, Model: n.Model}
					at[key] = nr
					rows = append(rows, nr)
				}
				nr.Visits += n.Visits
				nr.Failures += n.Failures
				if n.Usage.Input != nil || n.Usage.Output != nil {
					t := n.Usage.Tokens()
					if nr.Tokens != nil {
						t += *nr.Tokens
					}
					nr.Tokens = &t
				}
				if n.Usage.Cost != nil {
					c := *n.Usage.Cost
					if nr.Cost != nil {
						c += *nr.Cost
					}
					nr.Cost = &c
				}
			}
		}
		markMost(rows)
		out = append(out, rows...)
	}
	return out
}

// markMost marks, among one assignment's nodes, the one that failed most
// and the one that cost most (by cost, else tokens).
func markMost(rows []*NodeRow) {
	var fails, costs *NodeRow
	costOf := func(r *NodeRow) float64 {
		switch {
		case r.Cost != nil:
			return *r.Cost
		case r.Tokens != nil:
			return float64(*r.Tokens) / 1e9 // below any cost: tokens rank only among themselves
		}
		return -1
	}
	for _, r := range rows {
		if r.Kind == "agent" {
			if r.Tokens == nil {
				r.NotReported = append(r.NotReported, "tokens")
			}
			if r.Cost == nil {
				r.NotReported = append(r.NotReported, "cost")
			}
		}
		if r.Failures > 0 && (fails == nil || r.Failures > fails.Failures) {
			fails = r
		}
		if c := costOf(r); c > 0 && (costs == nil || c > costOf(costs)) {
			costs = r
		}
	}
	if fails != nil {
		fails.FailsMost = true
	}
	if costs != nil {
		costs.CostsMost = true
	}
}
