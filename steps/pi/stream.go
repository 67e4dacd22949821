package pi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

// event is one line of `pi --mode json`, with the fields the driver reads.
type event struct {
	Type string `json:"type"`
	// session header
	ID string `json:"id"`
	// message_start, message_end, turn_end
	Message *message `json:"message"`
	// message_update
	Update *struct {
		Type string `json:"type"`
	} `json:"assistantMessageEvent"`
	// tool_execution_*
	ToolName   string `json:"toolName"`
	ToolCallID string `json:"toolCallId"`
	IsError    bool   `json:"isError"`
	// auto_retry_*
	Attempt      int    `json:"attempt"`
	MaxAttempts  int    `json:"maxAttempts"`
	ErrorMessage string `json:"errorMessage"`
	Success      *bool  `json:"success"`
	FinalError   string `json:"finalError"`
	// compaction_end
	Aborted bool `json:"aborted"`
}

// message is an agent message: user, assistant or toolResult.
type message struct {
	Role         string    `json:"role"`
	Content      content   `json:"content"`
	StopReason   string    `json:"stopReason"`
	ErrorMessage string    `json:"errorMessage"`
	Usage        *msgUsage `json:"usage"`
	Model        string    `json:"model"`
	ResponseID   string    `json:"responseId"`
	ToolName     string    `json:"toolName"`
	IsError      bool      `json:"isError"`
}

type msgUsage struct {
	Input      *int64 `json:"input"`
	Output     *int64 `json:"output"`
	CacheRead  *int64 `json:"cacheRead"`
	CacheWrite *int64 `json:"cacheWrite"`
	Cost       *struct {
		Total *float64 `json:"total"`
	} `json:"cost"`
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// content is a message's content: pi writes user content as a list of
// blocks, but a plain string is accepted too.
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

// text joins the message's text blocks.
func (c content) text() string {
	var parts []string
	for _, b := range c {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// knownEvents are the event types of pi 0.73 that need no diagnostic.
var knownEvents = map[string]bool{
	"session": true, "agent_start": true, "agent_end": true, "turn_start": true, "turn_end": true,
	"message_start": true, "message_update": true, "message_end": true,
	"tool_execution_start": true, "tool_execution_update": true, "tool_execution_end": true,
	"auto_retry_start": true, "auto_retry_end": true, "compaction_start": true, "compaction_end": true,
	"queue_update": true,
}

// parser reads a pi event stream one line at a time and decides the turn's
// outcome from it: pi exits 0 even when every request failed, so the exit
// status alone says nothing.
type parser struct {
	activity *agentcli.Activity
	notes    *agentcli.Notes

	lines       int
	session     string
	last        *message // the last assistant message
	turns       int64
	ledger      usage.Ledger
	agentEnd    bool
	retryFailed string // auto_retry_end without success: the final error
	steps       []transcript.Step
	calls       *agentcli.Calls // the turn's tool calls, journalled for its trace
}

func newParser(progress func(engine.Progress), calls *agentcli.Calls) *parser {
	return &parser{activity: agentcli.NewActivity(progress), notes: agentcli.NewNotes("pi"), calls: calls}
}

// Feed reads line n (counted from 1) of the stream.
func (p *parser) Feed(n int, line []byte) {
	p.lines = n
	if strings.TrimSpace(string(line)) == "" {
		return
	}
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
		p.notes.Malformed(n, line)
		return
	}
	switch ev.Type {
	case "session":
		p.session = ev.ID
	case "agent_start":
		p.agentEnd = false
	case "agent_end":
		p.agentEnd = true
		p.ledger.Final()
	case "message_update", "turn_end":
		// Both repeat the assistant message, its usage and id (a
		// message_update has the usage once the provider sent it): the
		// ledger counts each response once.
		if m := ev.Message; m != nil && m.Role == "assistant" && m.ResponseID != "" && m.Usage != nil {
			p.report(m.ResponseID, m.Usage)
		}
		if ev.Type == "message_update" && ev.Update != nil {
			switch ev.Update.Type {
			case "text_delta", "text_start":
				p.activity.Report("writing")
			case "thinking_delta", "thinking_start":
				p.activity.Report("thinking")
			case "toolcall_start", "toolcall_delta":
				p.activity.Report("calling a tool")
			}
		}
	case "message_start":
		if ev.Message != nil && ev.Message.Role == "assistant" {
			p.ledger.Open()
		}
	case "message_end":
		if ev.Message != nil && ev.Message.Role == "assistant" {
			p.assistant(ev.Message)
		}
		p.step(ev.Message)
	case "tool_execution_start":
		p.activity.Report("using " + ev.ToolName)
	case "tool_execution_end":
		p.calls.Result(ev.ToolCallID, ev.IsError)
	case "auto_retry_start":
		p.notes.Add("pi retries after an error (attempt %d of %d): %s", ev.Attempt, ev.MaxAttempts, ev.ErrorMessage)
		p.activity.Report(fmt.Sprintf("retrying (%d of %d)", ev.Attempt, ev.MaxAttempts))
		p.steps = append(p.steps, transcript.Step{Kind: "error", Title: fmt.Sprintf("retry %d of %d", ev.Attempt, ev.MaxAttempts), Text: ev.ErrorMessage})
	case "auto_retry_end":
		if ev.Success != nil && !*ev.Success {
			p.retryFailed = ev.FinalError
			if p.retryFailed == "" {
				p.retryFailed = "unknown error"
			}
			p.steps = append(p.steps, transcript.Step{Kind: "error", Title: "gave up", Text: p.retryFailed})
		} else {
			p.retryFailed = ""
		}
	case "compaction_end":
		if ev.Aborted || ev.ErrorMessage != "" {
			p.notes.Add("pi's context compaction failed: %s", ev.ErrorMessage)
		}
	default:
		if !knownEvents[ev.Type] {
			p.notes.Unknown(n, ev.Type)
		}
	}
}

// step keeps what a finished message did for the readable transcript; the
// prompt (the user's message) is the turn's own.
func (p *parser) step(m *message) {
	switch {
	case m == nil:
	case m.Role == "toolResult":
		kind := "result"
		if m.IsError {
			kind = "error"
		}
		p.steps = append(p.steps, transcript.Step{Kind: kind, Title: m.ToolName, Text: m.Content.text()})
	case m.Role == "assistant":
		for _, c := range m.Content {
			switch c.Type {
			case "text":
				p.steps = append(p.steps, transcript.Step{Kind: "text", Text: c.Text})
			case "thinking":
				p.steps = append(p.steps, transcript.Step{Kind: "thinking", Text: c.Thinking})
			case "toolCall":
				p.steps = append(p.steps, transcript.Step{Kind: "tool", Title: c.Name, Text: string(c.Arguments)})
			}
		}
		if m.ErrorMessage != "" {
			p.steps = append(p.steps, transcript.Step{Kind: "error", Title: "stop " + m.StopReason, Text: m.ErrorMessage})
		}
	}
}

// assistant takes a finished assistant message: its usage, and the tool
// calls it made (journalled, with that usage, as each one's execution
// ends).
func (p *parser) assistant(m *message) {
	p.last = m
	p.turns++
	id := m.ResponseID
	if id == "" {
		id = fmt.Sprintf("message %d", p.turns)
	}
	if m.Usage != nil {
		p.report(id, m.Usage)
		p.calls.Usage(id, p.call(m.Usage))
	}
	for _, b := range m.Content {
		if b.Type == "toolCall" {
			p.calls.Use(id, b.ID, b.Name)
		}
	}
}

// report records the usage of response id and reports the live count.
// pi's input excludes the cache on every provider it speaks to.
func (p *parser) report(id string, u *msgUsage) {
	p.ledger.Report(id, p.call(u))
	p.activity.Tokens = p.ledger.Tokens()
	p.activity.Update()
}

// call is a message's usage in flow's vocabulary.
func (p *parser) call(u *msgUsage) usage.Call {
	c := usage.Anthropic(u.Input, u.Output, u.CacheRead, u.CacheWrite)
	if u.Cost != nil {
		c.Cost = u.Cost.Total
	}
	return c
}

// Outcome decides the turn's outcome from the stream alone, once it has
// ended; agentcli.Turn adds how pi exited.
func (p *parser) Outcome() agentcli.Outcome {
	o := agentcli.Outcome{Status: engine.Failed, Diagnostics: p.notes.List(), Session: p.session, Steps: p.steps}
	o.Usage = p.ledger.Usage()
	if p.turns > 0 {
		o.Usage.Turns = ptr(p.turns)
	}
	fail := func(format string, args ...any) agentcli.Outcome {
		o.Diagnostics = append(o.Diagnostics, fmt.Sprintf(format, args...))
		return o
	}
	if p.last != nil {
		o.Output = p.last.Content.text()
	}
	switch {
	case p.lines == 0:
		return fail("pi wrote no events")
	case p.retryFailed != "":
		return fail("pi gave up after retrying: %s", p.retryFailed)
	case p.last == nil:
		return fail("pi's stream has no assistant message")
	}
	switch p.last.StopReason {
	case "stop":
	case "length":
		return fail("the answer hit its length limit (stop reason %q)", p.last.StopReason)
	case "toolUse":
		return fail("the agent was still requesting tools when the stream ended")
	case "error":
		msg := p.last.ErrorMessage
		if msg == "" {
			msg = "unknown error"
		}
		return fail("the model request failed: %s", msg)
	case "aborted":
		o.Status = engine.Aborted
		return fail("the turn was aborted: %s", p.last.ErrorMessage)
	default:
		return fail("the last assistant message has an unexpected stop reason %q", p.last.StopReason)
	}
	switch {
	case !p.agentEnd:
		return fail("pi's stream ended before agent_end (truncated)")
	case p.notes.MalformedLines() > 0:
		return fail("pi's stream is not well-formed")
	case strings.TrimSpace(o.Output) == "":
		return fail("no answer: the last assistant message has no text")
	}
	o.Status = engine.Completed
	return o
}

func ptr[T any](v T) *T { return &v }
