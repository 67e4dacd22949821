package claude

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/meter"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

// event is one line of `claude -p --output-format stream-json --verbose`,
// with the fields the driver reads.
type event struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	// system/init
	Model string `json:"model"`
	// system/api_retry
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries"`
	ErrorStatus *int   `json:"error_status"`
	Error       any    `json:"error"`
	Message     *msg   `json:"message"`
	ParentTool  string `json:"parent_tool_use_id"`
	// result
	IsError          bool            `json:"is_error"`
	Result           string          `json:"result"`
	StopReason       string          `json:"stop_reason"`
	NumTurns         *int64          `json:"num_turns"`
	TotalCostUSD     *float64        `json:"total_cost_usd"`
	Usage            *tokens         `json:"usage"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	APIErrorStatus   *int            `json:"api_error_status"`
	Errors           []string        `json:"errors"`
	TerminalReason   string          `json:"terminal_reason"`
	PermissionDenied []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
	// stream_event (--include-partial-messages): the API's own stream
	Event *apiEvent `json:"event"`
}

// apiEvent is one event of the Messages API's stream, as Claude Code
// passes it on with --include-partial-messages: message_start has the
// message's id and its usage at the start, message_delta the usage at
// its end (the output tokens above all).
type apiEvent struct {
	Type    string  `json:"type"`
	Message *msg    `json:"message"`
	Usage   *tokens `json:"usage"`
}

type msg struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Model   string  `json:"model"`
	Content content `json:"content"`
	Usage   *tokens `json:"usage"`
}

type tokens struct {
	Input      *int64 `json:"input_tokens"`
	Output     *int64 `json:"output_tokens"`
	CacheRead  *int64 `json:"cache_read_input_tokens"`
	CacheWrite *int64 `json:"cache_creation_input_tokens"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	ID        string          `json:"id"` // tool_use
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error"`
	ToolUseID string          `json:"tool_use_id"`
}

// content is a message's content: a list of blocks, or a plain string.
type content []block

func (c *content) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*c = content{{Type: "text", Text: s}}
		return nil
	}
	var blocks []block
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

// knownEvents are the top-level event types of Claude Code 2.1 that need no
// diagnostic.
var knownEvents = map[string]bool{
	"system": true, "assistant": true, "user": true, "result": true, "stream_event": true,
	"rate_limit_event": true, "tool_progress": true, "tool_use_summary": true, "auth_status": true,
	"keep_alive": true, "prompt_suggestion": true,
}

// parser reads a Claude Code event stream one line at a time. The outcome is
// the result event's: the exit status and the subtype can both say success
// while is_error is true.
type parser struct {
	// mu orders the stream's lines and the meter's reports, which come
	// on goroutines of their own.
	mu       sync.Mutex
	activity *agentcli.Activity
	notes    *agentcli.Notes
	ledger   usage.Ledger

	lines   int
	session string
	result  *event
	steps   []transcript.Step
	tools   map[string]string // tool_use id → tool name, to title the results
	calls   *agentcli.Calls   // the turn's tool calls, journalled for its trace
	// usage is each message's usage as reported so far, by message id;
	// streaming is the message each agent (the turn's, "", or a
	// subagent's, by its tool use id) is streaming.
	usage     map[string]tokens
	streaming map[string]string
}

func newParser(progress func(engine.Progress), calls *agentcli.Calls) *parser {
	return &parser{activity: agentcli.NewActivity(progress), notes: agentcli.NewNotes("claude"), tools: map[string]string{}, calls: calls,
		usage: map[string]tokens{}, streaming: map[string]string{}}
}

// Feed reads line n (counted from 1) of the stream.
func (p *parser) Feed(n int, line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = n
	if strings.TrimSpace(string(line)) == "" {
		return
	}
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
		p.notes.Malformed(n, line)
		return
	}
	if ev.SessionID != "" && p.session == "" {
		p.session = ev.SessionID
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			p.ledger.Open() // the first request goes out
		}
		if ev.Subtype == "api_retry" {
			status := "no status"
			if ev.ErrorStatus != nil {
				status = fmt.Sprintf("HTTP %d", *ev.ErrorStatus)
			}
			p.notes.Add("claude retries a failed request (attempt %d of %d, %s, %v)", ev.Attempt, ev.MaxRetries, status, ev.Error)
			p.activity.Report(fmt.Sprintf("retrying (%d of %d)", ev.Attempt, ev.MaxRetries))
			p.steps = append(p.steps, transcript.Step{Kind: "error", Title: fmt.Sprintf("retry %d of %d", ev.Attempt, ev.MaxRetries), Text: fmt.Sprint(ev.Error)})
		}
	case "assistant", "user":
		p.step(ev.Type, ev.Message)
		if ev.Message == nil {
			return
		}
		if ev.Type == "user" {
			if ev.ParentTool == "" {
				for _, b := range ev.Message.Content {
					if b.Type == "tool_result" {
						p.calls.Result(b.ToolUseID, b.IsError)
					}
				}
			}
			return
		}
		if u := ev.Message.Usage; u != nil {
			// Claude Code sends one event per content block, each with its
			// message's id and usage: the ledger counts each message once.
			// A subagent's calls are billed too.
			p.report(ev.Message.ID, ev.ParentTool, *u)
		}
		if ev.ParentTool != "" {
			return // a subagent's message: its parent's activity tells
		}
		for _, b := range ev.Message.Content {
			switch b.Type {
			case "text":
				p.activity.Report("writing")
			case "thinking":
				p.activity.Report("thinking")
			case "tool_use":
				p.activity.Forget() // the same tool twice is two uses
				p.activity.Report("using " + b.Name)
				p.calls.Use(ev.Message.ID, b.ID, b.Name)
			}
		}
	case "stream_event":
		p.streamEvent(ev.ParentTool, ev.Event)
	case "result":
		r := ev
		p.result = &r
		c := usage.Call{}
		if u := ev.Usage; u != nil {
			c = usage.Anthropic(u.Input, u.Output, u.CacheRead, u.CacheWrite)
			c.Cost = ev.TotalCostUSD
		}
		switch said := (record.Usage{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite}).Tokens(); {
		case ev.Usage != nil && said >= p.ledger.Tokens():
			// The result's usage is the turn's final figure, with its cost.
			p.ledger.Total(c)
		default:
			// No figure, or one saying less than the messages' own usage,
			// each of which the server reported as it billed it: a request
			// Claude Code sent again after its answer was cut, or a turn
			// that ended on an error (its result may say 0). The messages'
			// figures stand.
			p.ledger.Final()
		}
		if ev.SessionID != "" {
			p.session = ev.SessionID
		}
		if ev.IsError {
			p.steps = append(p.steps, transcript.Step{Kind: "error", Title: "result " + ev.Subtype, Text: ev.Result})
		}
	default:
		if !knownEvents[ev.Type] {
			p.notes.Unknown(n, ev.Type)
		}
	}
}

// streamEvent reads a message's usage from the API's own stream
// (--include-partial-messages): at its start, and at its end, where the
// output tokens are — the assistant events carry only the start's, so a
// turn stopped before its result counts each message whole.
func (p *parser) streamEvent(agent string, e *apiEvent) {
	switch {
	case e == nil:
	case e.Type == "message_start" && e.Message != nil && e.Message.ID != "":
		p.streaming[agent] = e.Message.ID
		if e.Message.Usage != nil {
			p.report(e.Message.ID, agent, *e.Message.Usage)
		}
	case e.Type == "message_delta" && e.Usage != nil && p.streaming[agent] != "":
		p.report(p.streaming[agent], agent, *e.Usage)
	}
}

// report counts message id's usage u, from the agent's stream: each
// figure is the largest reported of the message (its usage only grows as
// it streams, and its start's is repeated on every content block), and
// the ledger counts each message once.
func (p *parser) report(id, agent string, u tokens) {
	was := p.usage[id]
	most := func(a, b *int64) *int64 {
		if a == nil || b != nil && *b > *a {
			return b
		}
		return a
	}
	now := tokens{Input: most(was.Input, u.Input), Output: most(was.Output, u.Output),
		CacheRead: most(was.CacheRead, u.CacheRead), CacheWrite: most(was.CacheWrite, u.CacheWrite)}
	p.usage[id] = now
	c := usage.Anthropic(now.Input, now.Output, now.CacheRead, now.CacheWrite)
	p.ledger.Report(id, c)
	if agent == "" {
		p.calls.Usage(id, c)
	}
	p.activity.Tokens = p.ledger.Tokens()
	p.activity.Update()
}

// tokens is the turn's live count, for the meter to ask the budget with.
func (p *parser) tokens() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ledger.Tokens()
}

// metered counts a request's usage as the turn's meter read it from the
// answer, before Claude Code read it: under the answer's message id, so
// that it and the stream's reports of the message count once.
func (p *parser) metered(r meter.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := r.ID
	if id == "" {
		id = "request " + strconv.Itoa(r.Request)
	}
	c := r.Call
	p.report(id, "", tokens{Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite})
}

// step keeps what a message did for the readable transcript, a subagent's
// too; the prompt (the user's text) is the turn's own.
func (p *parser) step(role string, m *msg) {
	if m == nil {
		return
	}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			if role == "assistant" {
				p.steps = append(p.steps, transcript.Step{Kind: "text", Text: c.Text})
			}
		case "thinking":
			p.steps = append(p.steps, transcript.Step{Kind: "thinking", Text: c.Thinking})
		case "tool_use":
			p.tools[c.ID] = c.Name
			p.steps = append(p.steps, transcript.Step{Kind: "tool", Title: c.Name, Text: string(c.Input)})
		case "tool_result":
			kind := "result"
			if c.IsError {
				kind = "error"
			}
			p.steps = append(p.steps, transcript.Step{Kind: kind, Title: p.tools[c.ToolUseID], Text: resultText(c.Content)})
		}
	}
}

// resultText renders a tool result's content: a string, or text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, bl := range blocks {
			if bl.Type == "text" {
				parts = append(parts, bl.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

// Outcome decides the turn's outcome once the stream has ended; agentcli.Turn
// adds how claude exited.
func (p *parser) Outcome() agentcli.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	o := agentcli.Outcome{Status: engine.Failed, Diagnostics: p.notes.List(), Session: p.session, Steps: p.steps,
		Usage: p.ledger.Usage()}
	if n := p.ledger.Calls(); n > 0 {
		o.Usage.Turns = ptr(int64(n))
	}
	fail := func(format string, args ...any) agentcli.Outcome {
		o.Diagnostics = append(o.Diagnostics, fmt.Sprintf(format, args...))
		return o
	}
	r := p.result
	switch {
	case p.lines == 0:
		return fail("claude wrote no events")
	case r == nil:
		return fail("claude's stream ended without a result event (truncated)")
	}
	if r.NumTurns != nil {
		o.Usage.Turns = r.NumTurns
	}
	o.Output = r.Result
	if len(r.StructuredOutput) > 0 && string(r.StructuredOutput) != "null" {
		o.Output = string(r.StructuredOutput)
	}
	for _, d := range r.PermissionDenied {
		o.Diagnostics = append(o.Diagnostics, fmt.Sprintf("claude was denied the tool %s (not in the agent's tools)", d.ToolName))
	}
	switch {
	case r.IsError:
		msg := strings.TrimSpace(r.Result)
		if msg == "" {
			msg = strings.Join(r.Errors, "; ")
		}
		if strings.Contains(msg, "output token maximum") {
			// Claude Code retries a max_tokens stop itself, then reports it
			// as an API error with a synthetic stop reason.
			return fail("the answer hit its length limit: %s", msg)
		}
		if r.APIErrorStatus != nil {
			return fail("claude's turn failed (subtype %s, HTTP %d): %s", r.Subtype, *r.APIErrorStatus, msg)
		}
		return fail("claude's turn failed (subtype %s): %s", r.Subtype, msg)
	case r.Subtype != "success":
		return fail("claude's turn ended with %s%s", r.Subtype, joinErrors(r.Errors))
	}
	switch r.StopReason {
	case "", "end_turn", "stop_sequence":
	case "max_tokens", "model_context_window_exceeded":
		return fail("the answer hit its length limit (stop reason %q)", r.StopReason)
	case "tool_use":
		// A typed answer ends the turn with the StructuredOutput tool call.
		if len(r.StructuredOutput) == 0 || string(r.StructuredOutput) == "null" {
			return fail("the agent was still requesting tools when the turn ended")
		}
	case "refusal":
		return fail("the model refused to answer")
	default:
		return fail("the turn ended with an unexpected stop reason %q", r.StopReason)
	}
	switch {
	case p.notes.MalformedLines() > 0:
		return fail("claude's stream is not well-formed")
	case strings.TrimSpace(o.Output) == "":
		return fail("no answer: the result has no text")
	}
	o.Status = engine.Completed
	return o
}

func joinErrors(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return ": " + strings.Join(errs, "; ")
}

func ptr[T any](v T) *T { return &v }
