package rundir

import "github.com/flowrun/flow/engine/record"

// Totals is usage.json: usage in all, and per visit, node and agent.
type Totals struct {
	Total  record.Usage            `json:"total"`
	Visits map[string]record.Usage `json:"visits"`
	Nodes  map[string]record.Usage `json:"nodes"`
	Agents map[string]record.Usage `json:"agents"`
}

// Tally totals the usage of every end fact: every attempt's spending
// counts, also that of a visit that ran again after a resume.
func Tally(facts []*record.Fact) *Totals {
	t := &Totals{Visits: map[string]record.Usage{}, Nodes: map[string]record.Usage{}, Agents: map[string]record.Usage{}}
	add := func(m map[string]record.Usage, key string, u record.Usage) {
		sum := m[key]
		sum.Add(u)
		m[key] = sum
	}
	for _, f := range facts {
		if f.Type != record.FactEnd || f.Usage == nil {
			continue
		}
		t.Total.Add(*f.Usage)
		add(t.Visits, f.Visit, *f.Usage)
		add(t.Nodes, f.Node, *f.Usage)
		if f.Agent != "" {
			add(t.Agents, f.Agent, *f.Usage)
		}
	}
	return t
}
