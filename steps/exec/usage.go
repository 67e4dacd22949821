package exec

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/usage"
)

// usagePrefix starts a stderr line a program reports its usage on.
const usagePrefix = "FLOW_USAGE "

// reported is the usage a program may report; absent fields stay nil.
// Input excludes the cache reads and writes, as on every driver.
type reported struct {
	ID         string   `json:"id"`
	Input      *int64   `json:"input"`
	Output     *int64   `json:"output"`
	CacheRead  *int64   `json:"cache_read"`
	CacheWrite *int64   `json:"cache_write"`
	Cost       *float64 `json:"cost"`
	Turns      *int64   `json:"turns"`
}

// reports reads the FLOW_USAGE lines of a program's stderr as it writes
// them, into the turn's ledger: a report with an id is the usage of that
// call (a later one with the same id replaces it), one without is the
// program's own total so far (a later one replaces it). Each report is
// sent as progress, so a budget watch sees it while the program runs.
type reports struct {
	progress func(engine.Progress)
	lines    *agentcli.LineWriter

	mu     sync.Mutex
	ledger usage.Ledger
	turns  map[string]int64
	diags  []string
}

func newReports(progress func(engine.Progress)) *reports {
	r := &reports{progress: progress, turns: map[string]int64{}}
	r.lines = agentcli.NewLineWriter(r.line)
	return r
}

// Write reads stderr as it comes; it never fails.
func (r *reports) Write(p []byte) (int, error) { return r.lines.Write(p) }

func (r *reports) line(_ int, raw []byte) {
	line := strings.TrimSpace(string(raw))
	body, found := strings.CutPrefix(line, usagePrefix)
	if !found {
		return
	}
	var rep reported
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		r.mu.Lock()
		r.diags = append(r.diags, fmt.Sprintf("ignoring the malformed usage report %q: %v", line, err))
		r.mu.Unlock()
		return
	}
	id := "call " + rep.ID
	if rep.ID == "" {
		id = "total"
	}
	c := usage.Call{Input: rep.Input, Output: rep.Output, CacheRead: rep.CacheRead, CacheWrite: rep.CacheWrite, Cost: rep.Cost}
	r.mu.Lock()
	r.ledger.Report(id, c)
	if rep.Turns != nil {
		r.turns[id] = *rep.Turns
	} else {
		delete(r.turns, id)
	}
	r.mu.Unlock()
	if n := r.ledger.Tokens(); n > 0 {
		r.progress(engine.Progress{Activity: "reported usage", Tokens: n})
	}
}

// usage is what the program reported, once stderr has ended; final says
// the program ended by itself (not stopped), so what it reported is all it
// will. Turns is 1 unless the program says otherwise.
func (r *reports) usage(final bool) (engine.Usage, []string) {
	r.lines.Flush()
	if final {
		r.ledger.Final()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.ledger.Usage()
	one := int64(1)
	u.Turns = &one
	if len(r.turns) > 0 {
		var n int64
		for _, t := range r.turns {
			n += t
		}
		u.Turns = &n
	}
	return u, append([]string(nil), r.diags...)
}
