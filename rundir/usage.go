package rundir

// Totals is usage.json: usage in all, and per visit, node and agent.
type Totals struct {
	Total  Usage            `json:"total"`
	Visits map[string]Usage `json:"visits"`
	Nodes  map[string]Usage `json:"nodes"`
	Agents map[string]Usage `json:"agents"`
}

// Tally totals the usage of every end fact: every attempt's spending
// counts, also that of a visit that ran again after a resume.
func Tally(facts []*Fact) *Totals {
	t := &Totals{Visits: map[string]Usage{}, Nodes: map[string]Usage{}, Agents: map[string]Usage{}}
	add := func(m map[string]Usage, key string, u Usage) {
		sum := m[key]
		sum.Add(u)
		m[key] = sum
	}
	for _, f := range facts {
		if f.Type != FactEnd || f.Usage == nil {
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
