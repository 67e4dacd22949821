package exec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
	flowrecord "github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/usage"
)

// usagePrefix starts a stderr line a program reports its usage on.
const usagePrefix = "FLOW_USAGE "

// maxReportLine bounds a stderr line read for a report: a usage report is
// short, and a program that writes hundreds of megabytes of stderr on one
// line must not have them held (stderr itself is kept as a bounded tail).
const maxReportLine = 64 << 10

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
	line     []byte // the line being written, unless it is too long to be a report
	skipping bool   // the line being written is longer than maxReportLine

	mu     sync.Mutex
	ledger usage.Ledger
	turns  map[string]int64
	diags  []string
}

func newReports(progress func(engine.Progress)) *reports {
	return &reports{progress: progress, turns: map[string]int64{}}
}

// Write reads stderr as it comes, line by line, holding at most
// maxReportLine bytes of a line; it never fails. Writes may split lines
// anywhere, as a pipe does. It is called by one goroutine at a time.
func (r *reports) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if !r.skipping {
			if len(r.line)+len(part) > maxReportLine {
				r.skipping, r.line = true, r.line[:0]
			} else {
				r.line = append(r.line, part...)
			}
		}
		if i >= 0 {
			r.flush()
		}
	}
	return n, nil
}

// flush reads the line written so far as ended.
func (r *reports) flush() {
	if !r.skipping && len(r.line) > 0 {
		r.report(r.line)
	}
	r.line, r.skipping = r.line[:0], false
}

func (r *reports) report(raw []byte) {
	line := strings.TrimSpace(string(raw))
	body, found := strings.CutPrefix(line, usagePrefix)
	if !found {
		return
	}
	var rep reported
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		// A figure that is not a whole number lands here too: the turn's
		// usage is unknown, never what the other reports add up to.
		r.ledger.Unknown()
		r.mu.Lock()
		r.diags = append(r.diags, fmt.Sprintf("ignoring the malformed usage report %q: %v; the turn's usage is unknown", line, err))
		r.mu.Unlock()
		return
	}
	if c := (usage.Call{Input: rep.Input, Output: rep.Output, CacheRead: rep.CacheRead, CacheWrite: rep.CacheWrite, Cost: rep.Cost}); !c.Valid() ||
		rep.Turns != nil && *rep.Turns < 0 {
		r.mu.Lock()
		r.diags = append(r.diags, fmt.Sprintf("ignoring the usage report %q: a figure is below 0 or past %d; the turn's usage is unknown", line, int64(usage.MaxFigure)))
		r.mu.Unlock()
		r.ledger.Unknown()
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
func (r *reports) usage(final bool) (flowrecord.Usage, []string) {
	r.flush()
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
