// Package usage is the one accounting rule of every driver
// (docs/drivers.md#usage): a turn's usage is what the provider reported,
// deduplicated by the provider's message or response id, summed once per
// API call, and normalised one way — input excludes cache reads and cache
// writes, so input + output + cache_read + cache_write is what the
// provider billed. The figure a running turn reports for its budget watch
// and the figure recorded when it ends come from one Ledger.
package usage

import (
	"math"
	"strconv"
	"sync"

	"github.com/flowrun/flow/engine/record"
)

// Call is what a provider reported for one API call, in flow's vocabulary:
// Input excludes the cache reads and writes. A nil field was not reported.
type Call struct {
	Input, Output, CacheRead, CacheWrite *int64
	Cost                                 *float64
}

// Anthropic is a call's usage as the Anthropic Messages API reports it
// (and pi, which normalises every provider so): input_tokens already
// excludes cache_read_input_tokens and cache_creation_input_tokens.
func Anthropic(input, output, cacheRead, cacheWrite *int64) Call {
	return Call{Input: input, Output: output, CacheRead: cacheRead, CacheWrite: cacheWrite}
}

// OpenAI is a call's usage as the OpenAI APIs report it (Chat Completions'
// prompt_tokens, the Responses API's and Codex's input_tokens): the prompt
// counts its cached tokens, which are taken out of Input here. They report
// no cache writes.
func OpenAI(prompt, cached, output *int64) Call {
	c := Call{Input: prompt, Output: output, CacheRead: cached}
	if prompt != nil && cached != nil && *prompt >= 0 && *cached >= 0 {
		c.Input = ptr(max(*prompt-*cached, 0))
	}
	return c
}

// MaxFigure bounds a token figure of one call: a provider that reports
// more (or less than zero) is not believed, so that no sum can overflow
// and no report can refund a budget.
const MaxFigure = 1 << 40

// MaxCost bounds the dollar cost of one call, for the same reason.
const MaxCost = 1e9

// Valid reports whether every figure c reports is a whole number of tokens
// from 0 to MaxFigure and its cost a finite amount from 0 to MaxCost
// (docs/drivers.md#usage). A report that is not valid makes the turn's
// usage unknown: budgets then count the turn as its reservation, never as
// a refund.
func (c Call) Valid() bool {
	for _, p := range []*int64{c.Input, c.Output, c.CacheRead, c.CacheWrite} {
		if p != nil && (*p < 0 || *p > MaxFigure) {
			return false
		}
	}
	return c.Cost == nil || !math.IsNaN(*c.Cost) && *c.Cost >= 0 && *c.Cost <= MaxCost
}

// Ledger is the usage of one turn as its stream reports it. Its zero value
// is an empty ledger; it is safe for concurrent use.
type Ledger struct {
	mu     sync.Mutex
	calls  map[string]Call
	order  []string
	total  *Call // the provider's own figure for the whole turn
	final  bool
	opened bool
	// unknown: a report was not valid (Call.Valid), or could not be read;
	// the turn's usage is unknown.
	unknown bool
}

// Unknown says a report of the turn's usage could not be read (a
// malformed one): the turn's usage is unknown.
func (l *Ledger) Unknown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unknown = true
}

// Open says a call went out: from now on, a turn that ends without the
// provider's final figure has a partial usage, even if nothing was
// reported yet. A driver that makes several calls itself (the openai
// driver's tool rounds) opens each: the end seen of an earlier one is
// not the end of the turn.
func (l *Ledger) Open() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = true
	if l.total == nil {
		l.final = false
	}
}

// Report records the usage of call id (a message or response id). A later
// report of the same id replaces the earlier one: Claude Code repeats a
// message's usage on every content block, and a call's figures grow while
// it streams. An empty id is a call of its own.
//
// A report that is not valid (a negative or absurd figure) is not counted,
// and makes the turn's usage unknown.
func (l *Ledger) Report(id string, c Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = true
	if !c.Valid() {
		l.unknown = true
		return
	}
	if l.calls == nil {
		l.calls = map[string]Call{}
	}
	if id == "" {
		id = "\x00" + strconv.Itoa(len(l.order))
	}
	if _, seen := l.calls[id]; !seen {
		l.order = append(l.order, id)
	}
	l.calls[id] = c
}

// Total records the provider's own final figure for the whole turn
// (Claude Code's result event, Codex's turn.completed): it stands instead
// of the sum of the calls, and the turn's usage is final.
//
// A figure that is not valid is not counted, and makes the turn's usage
// unknown: the calls' figures stand.
func (l *Ledger) Total(c Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened, l.final = true, true
	if !c.Valid() {
		l.unknown = true
		return
	}
	l.total = &c
}

// Final says the stream ended as the provider ends a turn (pi's
// agent_end, a chat stream's [DONE]): the calls reported are all there
// are.
func (l *Ledger) Final() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.final = true
}

// Calls is how many distinct calls were reported.
func (l *Ledger) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// Usage is the turn's usage as reported so far: the live figure while the
// stream runs, the recorded one once it has ended. It is Partial when a
// call went out but the provider's final figure never came. Turns and the
// times are the driver's to fill in.
func (l *Ledger) Usage() record.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	var u record.Usage
	add := func(c Call) {
		u.Add(record.Usage{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, Cost: c.Cost})
	}
	if l.total != nil {
		add(*l.total)
	} else {
		for _, id := range l.order {
			add(l.calls[id])
		}
	}
	u.Partial = l.opened && !l.final
	u.Unknown = l.unknown
	return u
}

// Tokens is the live token count of the turn (engine.Usage.Tokens of
// Usage): what progress reports and budget watches compare.
func (l *Ledger) Tokens() int64 {
	return l.Usage().Tokens()
}

func ptr[T any](v T) *T { return &v }
