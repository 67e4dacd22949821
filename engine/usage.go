package engine

import (
	"sync"
	"time"
)

// addTurn adds what one turn reported. A field stays nil (not reported)
// until some turn reports it.
func (u *Usage) addTurn(t Usage, wall time.Duration) {
	u.Input = addInt(u.Input, t.Input)
	u.Output = addInt(u.Output, t.Output)
	u.CacheRead = addInt(u.CacheRead, t.CacheRead)
	u.CacheWrite = addInt(u.CacheWrite, t.CacheWrite)
	u.Turns = addInt(u.Turns, t.Turns)
	if t.Cost != nil {
		c := *t.Cost
		if u.Cost != nil {
			c += *u.Cost
		}
		u.Cost = &c
	}
	if t.WallMS > 0 {
		u.WallMS += t.WallMS
	} else {
		u.WallMS += wall.Milliseconds()
	}
	u.BusyMS += t.BusyMS
}

func (u *Usage) add(t Usage) {
	wall := u.WallMS
	u.addTurn(t, 0)
	u.WallMS = wall + t.WallMS
}

func addInt(a, b *int64) *int64 {
	if b == nil {
		return a
	}
	s := *b
	if a != nil {
		s += *a
	}
	return &s
}

// Tokens is input plus output tokens, as far as reported.
func (u Usage) Tokens() int64 {
	var n int64
	if u.Input != nil {
		n += *u.Input
	}
	if u.Output != nil {
		n += *u.Output
	}
	return n
}

// usageBook totals usage per visit, node and agent, for usage.json.
type usageBook struct {
	mu      sync.Mutex
	visits  map[string]Usage
	nodes   map[string]Usage
	agents  map[string]Usage
	overall Usage
}

func newUsageBook() *usageBook {
	return &usageBook{visits: map[string]Usage{}, nodes: map[string]Usage{}, agents: map[string]Usage{}}
}

func (b *usageBook) add(visit, node, agent string, u Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range []struct {
		m   map[string]Usage
		key string
	}{{b.visits, visit}, {b.nodes, node}, {b.agents, agent}} {
		cur := m.m[m.key]
		cur.add(u)
		m.m[m.key] = cur
	}
	b.overall.add(u)
}

func (b *usageBook) total() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.overall
}

func (b *usageBook) report() map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return map[string]any{"total": b.overall, "visits": b.visits, "nodes": b.nodes, "agents": b.agents}
}
