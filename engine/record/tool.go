package record

import "time"

// FactTool records one tool call of a turn whose driver runs the tools
// itself (the native driver, docs/native.md): the call and its result,
// written once the result is in, so that a resumed run rebuilds the
// turn's conversation from these facts and makes no call twice.
const FactTool FactType = "tool"

// ToolCall is one tool call of a turn and its result, bounded and redacted
// as every fact is.
type ToolCall struct {
	// Turn names the turn the call belongs to; a resumed turn keeps the
	// name of the one it continues.
	Turn string `json:"turn"`
	// Opening is a digest of the turn's first request (system message,
	// history and turn text): a resumed turn continues recorded calls only
	// when its own opening is the same.
	Opening string `json:"opening,omitempty"`
	// Step is the request (from 1) whose answer made the call, Seq the
	// call's place among the turn's calls (from 1).
	Step int `json:"step"`
	Seq  int `json:"seq"`
	// Protocol is how the model called the tool: "native" (the server's
	// tool calls) or "text" (a fenced block in its answer).
	Protocol string `json:"protocol"`
	// ID is the call's id as the model gave it, Name the tool, Args its
	// arguments as the model wrote them (JSON for native calls).
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
	// Said is the text of the answer that made the call, and Batch every
	// call that answer made when it made more than one (both on a step's
	// first call): the rebuilt conversation repeats them.
	Said  string      `json:"said,omitempty"`
	Batch []BatchCall `json:"batch,omitempty"`
	// Result is what the tool gave back, as the model was given it; Error
	// says it is an error result.
	Result string `json:"result"`
	Error  bool   `json:"error,omitempty"`
	// Response and Usage are the step's answer's id and usage, on the
	// step's first call: a resumed turn counts them again in its ledger,
	// since the killed attempt recorded no end.
	Response string `json:"response,omitempty"`
	Usage    *Usage `json:"usage,omitempty"`
	WallMS   int64  `json:"wall_ms,omitempty"`
	// Tree is the git tree of the working directory after the call, when
	// it is a repository's: a resumed turn whose working copy was made
	// again brings it back to this.
	Tree string `json:"tree,omitempty"`
}

// ToolCalled is the fact of one tool call.
type ToolCalled struct {
	Time  time.Time
	Visit string
	Tool  ToolCall
}

// Fact is the tool fact.
func (c ToolCalled) Fact() *Fact {
	call := c.Tool
	return &Fact{Type: FactTool, Time: c.Time, Visit: c.Visit, Tool: &call}
}

// Unfinished returns, by visit, the tool calls of the last turn of every
// visit that has no end fact after them: the turns a resumed run
// continues. Calls of a visit's earlier turns (an attempt that failed and
// was retried) are dropped.
func Unfinished(facts []*Fact) map[string][]ToolCall {
	out := map[string][]ToolCall{}
	for _, f := range facts {
		switch {
		case f.Type == FactEnd:
			delete(out, f.Visit)
		case f.Type == FactTool && f.Tool != nil:
			calls := out[f.Visit]
			if len(calls) > 0 && calls[len(calls)-1].Turn != f.Tool.Turn {
				calls = nil
			}
			out[f.Visit] = append(calls, *f.Tool)
		}
	}
	return out
}

// BatchCall is one of the calls an answer made at once.
type BatchCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// ToolLog is a turn's tool-call journal (engine.Turn.Tools).
type ToolLog struct {
	// Earlier are the calls of the visit's last turn that an earlier
	// attempt of the run recorded and did not end, oldest first: the
	// turn continues from them when it is the same turn (its opening).
	Earlier []ToolCall
	// Record appends one call and its result to the journal; an error
	// fails the turn.
	Record func(ToolCall) error
}
