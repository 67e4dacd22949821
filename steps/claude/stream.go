package claude

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
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
	Usage            *usage          `json:"usage"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	APIErrorStatus   *int            `json:"api_error_status"`
	Errors           []string        `json:"errors"`
	TerminalReason   string          `json:"terminal_reason"`
	PermissionDenied []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
}

type msg struct {
	Role    string  `json:"role"`
	Model   string  `json:"model"`
	Content content `json:"content"`
	Usage   *usage  `json:"usage"`
}

type usage struct {
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
	progress func(engine.Progress)

	lines     int
	malformed int
	diags     []string
	unknown   map[string]bool
	session   string
	result    *event
	activity  string
	tokens    int64 // preliminary, for progress only
}

func newParser(progress func(engine.Progress)) *parser {
	if progress == nil {
		progress = func(engine.Progress) {}
	}
	return &parser{progress: progress, unknown: map[string]bool{}}
}

func (p *parser) diag(format string, args ...any) {
	p.diags = append(p.diags, fmt.Sprintf(format, args...))
}

func (p *parser) report(activity string) {
	if activity == p.activity {
		return
	}
	p.activity = activity
	p.progress(engine.Progress{Activity: activity, Tokens: p.tokens})
}

// feed reads one line of the stream.
func (p *parser) feed(line []byte) {
	p.lines++
	if strings.TrimSpace(string(line)) == "" {
		return
	}
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
		p.malformed++
		if p.malformed <= 3 {
			p.diag("line %d of claude's output is not a JSON event: %s", p.lines, excerpt(string(line)))
		}
		return
	}
	if ev.SessionID != "" && p.session == "" {
		p.session = ev.SessionID
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "api_retry" {
			status := "no status"
			if ev.ErrorStatus != nil {
				status = fmt.Sprintf("HTTP %d", *ev.ErrorStatus)
			}
			p.diag("claude retries a failed request (attempt %d of %d, %s, %v)", ev.Attempt, ev.MaxRetries, status, ev.Error)
			p.report(fmt.Sprintf("retrying (%d of %d)", ev.Attempt, ev.MaxRetries))
		}
	case "assistant":
		if ev.Message == nil || ev.ParentTool != "" {
			return // a subagent's message: its parent's result tells
		}
		if u := ev.Message.Usage; u != nil {
			// Preliminary: shown as progress, never recorded as usage.
			p.tokens += deref(u.Input) + deref(u.Output)
		}
		for _, b := range ev.Message.Content {
			switch b.Type {
			case "text":
				p.report("writing")
			case "thinking":
				p.report("thinking")
			case "tool_use":
				p.activity = "" // the same tool twice is two uses
				p.report("using " + b.Name)
			}
		}
	case "result":
		r := ev
		p.result = &r
		if ev.SessionID != "" {
			p.session = ev.SessionID
		}
	default:
		if !knownEvents[ev.Type] && !p.unknown[ev.Type] {
			p.unknown[ev.Type] = true
			p.diag("line %d: unknown claude event %q (ignored)", p.lines, ev.Type)
		}
	}
}

// outcome is what the stream says about the turn.
type outcome struct {
	status engine.Status
	output string
	diags  []string
	usage  engine.Usage
}

// outcome decides the turn's outcome once the stream has ended.
func (p *parser) outcome() outcome {
	o := outcome{status: engine.Failed, diags: append([]string(nil), p.diags...)}
	if p.malformed > 3 {
		o.diags = append(o.diags, fmt.Sprintf("%d more lines were not JSON events", p.malformed-3))
	}
	fail := func(format string, args ...any) outcome {
		o.diags = append(o.diags, fmt.Sprintf(format, args...))
		return o
	}
	r := p.result
	switch {
	case p.lines == 0:
		return fail("claude wrote no events")
	case r == nil:
		return fail("claude's stream ended without a result event (truncated)")
	}
	// Usage is the result's: the assistant events' usage is preliminary.
	if u := r.Usage; u != nil {
		o.usage.Input, o.usage.Output, o.usage.CacheRead, o.usage.CacheWrite = u.Input, u.Output, u.CacheRead, u.CacheWrite
	}
	o.usage.Cost, o.usage.Turns = r.TotalCostUSD, r.NumTurns
	o.output = r.Result
	if len(r.StructuredOutput) > 0 && string(r.StructuredOutput) != "null" {
		o.output = string(r.StructuredOutput)
	}
	for _, d := range r.PermissionDenied {
		o.diags = append(o.diags, fmt.Sprintf("claude was denied the tool %s (not in the agent's tools)", d.ToolName))
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
	case p.malformed > 0:
		return fail("claude's stream is not well-formed")
	case strings.TrimSpace(o.output) == "":
		return fail("no answer: the result has no text")
	}
	o.status = engine.Completed
	return o
}

func joinErrors(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return ": " + strings.Join(errs, "; ")
}

func excerpt(s string) string {
	const most = 120
	s = strings.TrimSpace(s)
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
