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

// tally sums usage without allocating: plain numbers, and a bit per field
// that says whether any turn reported it. It becomes a Usage (nil = not
// reported) only when it is written out.
type tally struct {
	input, output, cacheRead, cacheWrite, turns int64
	cost                                        float64
	wall, busy                                  int64
	reported                                    uint8
}

const (
	hasInput = 1 << iota
	hasOutput
	hasCacheRead
	hasCacheWrite
	hasTurns
	hasCost
)

func (t *tally) add(u *Usage) {
	addField := func(dst *int64, src *int64, bit uint8) {
		if src != nil {
			*dst += *src
			t.reported |= bit
		}
	}
	addField(&t.input, u.Input, hasInput)
	addField(&t.output, u.Output, hasOutput)
	addField(&t.cacheRead, u.CacheRead, hasCacheRead)
	addField(&t.cacheWrite, u.CacheWrite, hasCacheWrite)
	addField(&t.turns, u.Turns, hasTurns)
	if u.Cost != nil {
		t.cost += *u.Cost
		t.reported |= hasCost
	}
	t.wall += u.WallMS
	t.busy += u.BusyMS
}

// merge adds another tally's sums to t.
func (t *tally) merge(o *tally) {
	t.input += o.input
	t.output += o.output
	t.cacheRead += o.cacheRead
	t.cacheWrite += o.cacheWrite
	t.turns += o.turns
	t.cost += o.cost
	t.wall += o.wall
	t.busy += o.busy
	t.reported |= o.reported
}

func (t *tally) usage() Usage {
	field := func(v int64, bit uint8) *int64 {
		if t.reported&bit == 0 {
			return nil
		}
		return &v
	}
	u := Usage{Input: field(t.input, hasInput), Output: field(t.output, hasOutput), CacheRead: field(t.cacheRead, hasCacheRead),
		CacheWrite: field(t.cacheWrite, hasCacheWrite), Turns: field(t.turns, hasTurns), WallMS: t.wall, BusyMS: t.busy}
	if t.reported&hasCost != 0 {
		c := t.cost
		u.Cost = &c
	}
	return u
}

// usageBook totals usage per visit, node and agent, for usage.json.
// Visits are kept in the order they ended and sorted only for usage.json:
// a map of thousands of visits, grown under the lock that every ending
// visit takes, kept the visits of a map block waiting on each other.
type usageBook struct {
	mu sync.Mutex
	// visits are kept in chunks, each new one twice as long as the one
	// before up to usageChunk: an append never copies what the book has
	// under the lock every ending visit takes.
	visits  [][]visitTally
	nodes   map[string]*tally
	agents  map[string]*tally
	overall tally
	slab    []tally // where new tallies are cut from; earlier slabs stay where they are
}

// newUsageBook returns a book sized for a flow of about nodes nodes.
func newUsageBook(nodes int) *usageBook {
	return &usageBook{visits: [][]visitTally{make([]visitTally, 0, min(max(nodes, 16), usageChunk))}, nodes: make(map[string]*tally, nodes),
		agents: map[string]*tally{}, slab: make([]tally, 0, min(nodes, 1024))}
}

const usageChunk = 256

// visitTally is one visit's usage.
type visitTally struct {
	visit string
	tally
}

func (b *usageBook) add(visit, node, agent string, u Usage) {
	v := visitTally{visit: visit}
	v.add(&u)
	b.mu.Lock()
	defer b.mu.Unlock()
	last := &b.visits[len(b.visits)-1]
	if len(*last) == cap(*last) {
		b.visits = append(b.visits, make([]visitTally, 0, min(2*cap(*last), usageChunk)))
		last = &b.visits[len(b.visits)-1]
	}
	*last = append(*last, v)
	b.tally(b.nodes, node).add(&u)
	b.tally(b.agents, agent).add(&u)
	b.overall.add(&u)
}

// tally returns m's tally for key, made if there is none. Tallies are cut
// from a slab, not allocated one by one: a large flow has one per node.
func (b *usageBook) tally(m map[string]*tally, key string) *tally {
	if t := m[key]; t != nil {
		return t
	}
	if len(b.slab) == cap(b.slab) {
		b.slab = make([]tally, 0, max(2*cap(b.slab), 64))
	}
	b.slab = b.slab[:len(b.slab)+1]
	t := &b.slab[len(b.slab)-1]
	m[key] = t
	return t
}

func (b *usageBook) total() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.overall.usage()
}

// encode writes usage.json: the total, then usage per visit, node and
// agent, keys sorted — the same object encoding/json would write, without
// reflection (a run of thousands of visits writes it at its end).
func (b *usageBook) encode(sp *spool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	total := b.overall.usage()
	sp.b = append(sp.b, `{"agents":`...)
	sp.b = appendTallies(sp.b, b.agents)
	sp.b = append(sp.b, `,"nodes":`...)
	sp.b = appendTallies(sp.b, b.nodes)
	sp.b = append(sp.b, `,"total":`...)
	sp.b = appendUsageValue(sp.b, &total)
	sp.b = append(sp.b, `,"visits":{`...)
	visits := b.allVisits()
	sortBy(visits, func(v *visitTally) string { return v.visit })
	for i := 0; i < len(visits); {
		if i > 0 {
			sp.b = append(sp.b, ',')
		}
		v := visits[i]
		for i++; i < len(visits) && visits[i].visit == v.visit; i++ {
			v.merge(&visits[i].tally) // a visit that ended twice counts once, whole
		}
		sp.b = appendString(sp.b, v.visit)
		sp.b = append(sp.b, ':')
		sp.b = v.appendJSON(sp.b)
		sp.flush()
	}
	sp.b = append(sp.b, "}}\n"...)
}

// allVisits returns the visits' tallies in one slice; b.mu is held.
func (b *usageBook) allVisits() []visitTally {
	if len(b.visits) == 1 {
		return b.visits[0]
	}
	n := 0
	for _, c := range b.visits {
		n += len(c)
	}
	all := make([]visitTally, 0, n)
	for _, c := range b.visits {
		all = append(all, c...)
	}
	return all
}

func appendTallies(b []byte, m map[string]*tally) []byte {
	b, _ = appendObject(b, m, func(b []byte, t *tally) ([]byte, error) {
		return t.appendJSON(b), nil
	})
	return b
}

// appendJSON appends the tally as appendUsageValue would its usage(),
// without making the Usage.
func (t *tally) appendJSON(b []byte) []byte {
	num := func(b []byte, name string, v int64, bit uint8) []byte {
		b = append(b, name...)
		if t.reported&bit == 0 {
			return append(b, "null"...)
		}
		return appendInt(b, v)
	}
	b = num(b, `{"input":`, t.input, hasInput)
	b = num(b, `,"output":`, t.output, hasOutput)
	b = num(b, `,"cache_read":`, t.cacheRead, hasCacheRead)
	b = num(b, `,"cache_write":`, t.cacheWrite, hasCacheWrite)
	b = append(b, `,"cost":`...)
	if t.reported&hasCost == 0 {
		b = append(b, "null"...)
	} else {
		b, _ = appendFloat(b, t.cost)
	}
	b = num(b, `,"turns":`, t.turns, hasTurns)
	b = append(b, `,"wall_ms":`...)
	b = appendInt(b, t.wall)
	b = append(b, `,"busy_ms":`...)
	b = appendInt(b, t.busy)
	return append(b, '}')
}
