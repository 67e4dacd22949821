package agentcli

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/usage"
)

// Calls journals the tool calls an agent CLI's stream shows — each call
// once its result is in, with the request (step) whose answer made it and,
// on a step's first call, that answer's usage — as the journal's tool
// facts, so that the run's trace has an execute_tool span per call and a
// chat span per request (docs/tracing.md). Unlike a native turn's, these
// facts are never replayed: the CLI ran the tools, and a resumed turn
// starts afresh. The call's arguments and result are left out (the CLI's
// transcript has them). A nil *Calls, or one without a log, journals
// nothing. A Calls is safe for concurrent use: the openai driver reports
// the results of an answer's calls as each returns.
type Calls struct {
	mu       sync.Mutex
	log      *record.ToolLog
	protocol string
	turn     string
	step     int    // the request whose answer made the last calls
	message  string // that answer's id
	seq      int
	usage    map[string]usage.Call // the answers' usage, by id, as last reported
	open     map[string]*openCall  // calls made, by id, whose result has not come
	answered map[int]bool          // the steps whose answer a fact carries
	err      error
}

type openCall struct {
	call    record.ToolCall
	message string // the answer that made it
	at      time.Time
}

var turns atomic.Int64

// NewCalls journals a turn's calls into log; protocol names the CLI
// ("claude", …) in the facts.
func NewCalls(log *record.ToolLog, protocol string) *Calls {
	return &Calls{log: log, protocol: protocol, turn: fmt.Sprintf("%s-%d-%d", protocol, time.Now().UnixNano(), turns.Add(1)),
		usage: map[string]usage.Call{}, open: map[string]*openCall{}, answered: map[int]bool{}}
}

// Usage keeps what the provider reported for the answer message, the
// latest report winning.
func (c *Calls) Usage(message string, u usage.Call) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usage[message] = u
}

// Use is the call id of tool name, made by the answer message.
func (c *Calls) Use(message, id, name string) {
	if c == nil || id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if message != c.message || c.step == 0 {
		c.step++
		c.message = message
	}
	c.seq++
	c.open[id] = &openCall{call: record.ToolCall{Turn: c.turn, Step: c.step, Seq: c.seq, Protocol: c.protocol, ID: id, Name: name},
		message: message, at: time.Now()}
}

// Result is the result of call id: its fact is written now. The first of
// a step's facts written — whichever of its calls returned first, as the
// trace reads them in the journal's order — carries the answer and its
// usage.
func (c *Calls) Result(id string, isError bool) {
	if c == nil || c.log == nil || c.log.Record == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	oc, ok := c.open[id]
	if !ok {
		return
	}
	delete(c.open, id)
	call := oc.call
	call.Error = isError
	call.WallMS = time.Since(oc.at).Milliseconds()
	if !c.answered[call.Step] {
		c.answered[call.Step] = true
		call.Response = oc.message
		if u, ok := c.usage[oc.message]; ok {
			call.Usage = &record.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Cost: u.Cost}
		}
	}
	// A fact that cannot be written leaves the trace without it; the turn
	// goes on.
	c.err = c.log.Record(call)
}
