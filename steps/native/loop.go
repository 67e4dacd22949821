package native

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/steps/delegate"
	"github.com/flowrun/flow/steps/openai"
	"github.com/flowrun/flow/steps/transcript"
)

// ArgsLimit bounds a call's arguments as its fact keeps them.
const ArgsLimit = 64 << 10

// conv is one turn's conversation: its messages, the protocol its tool
// calls take, and the steps (requests) so far.
type conv struct {
	d        *Driver
	t        *engine.Turn
	log      *transcript.Log
	res      *engine.TurnResult
	model    string
	secrets  *secret.Redactor
	tools    []string
	maxSteps int
	box      *toolbox
	x        *openai.Exchange
	steps    []transcript.Step

	msgs     []openai.Message
	protocol string
	refused  bool     // the server refused the request with tools
	notes    []string // what the turn decided on the way, for its diagnostics
	turn     string   // the turn's name in its tool facts
	opening  string   // the digest of its first request's messages
	step     int      // requests answered
	seq      int      // tool calls made
	ollama   *bool
	numCtx   int
	url      string // the chat completions endpoint
}

func (c *conv) endpoint() string { return c.url }

// begin sets the turn's first messages, and continues the calls an
// earlier attempt recorded for the same turn (resume.go).
func (c *conv) begin(ctx context.Context, msgs []openai.Message) {
	c.msgs = msgs
	b, _ := json.Marshal(msgs)
	sum := sha256.Sum256(b)
	c.opening = hex.EncodeToString(sum[:12])
	c.protocol = ProtocolNative
	c.turn = newTurnID()
	c.resume(ctx)
}

// names are the tools the model is offered: the agent's, and delegate
// when the turn may delegate.
func (c *conv) names() []string {
	if c.t.Delegate != nil {
		return append(append([]string(nil), c.tools...), delegate.Tool)
	}
	return c.tools
}

// definitions are the offered tools as the request's tools.
func (c *conv) definitions() []any {
	var out []any
	for _, n := range c.names() {
		fn := map[string]any{"name": n}
		if n == delegate.Tool {
			fn["description"], fn["parameters"] = delegate.Description, delegate.Schema(c.t.Delegate.Agents)
		} else {
			fn["description"], fn["parameters"] = definitions[n]["description"], definitions[n]["parameters"]
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	return out
}

// useText switches the turn to the text protocol: the system message
// gains the protocol's instructions, and no request offers tools.
func (c *conv) useText() {
	if c.protocol == ProtocolText {
		return
	}
	c.protocol = ProtocolText
	add := textInstructions(c.tools, c.t.Delegate)
	if len(c.msgs) > 0 && c.msgs[0].Role == "system" {
		c.msgs[0].Content += add
		return
	}
	c.msgs = append([]openai.Message{{Role: "system", Content: add}}, c.msgs...)
}

// body is the next request.
func (c *conv) body(ctx context.Context) []byte {
	var tools []any
	var schema []byte
	if c.protocol == ProtocolNative {
		tools, schema = c.definitions(), c.t.OutputSchema
	}
	b := openai.RequestBody(c.model, c.msgs, schema, tools)
	if c.isOllama(ctx) {
		b = c.withNumCtx(b)
	}
	return b
}

// run sends requests and serves the calls their answers make, until an
// answer calls no tool: that answer's round is returned, res says how it
// ended. nil means no answer: res says why, the error is the turn's.
func (c *conv) run(ctx context.Context) (*openai.Round, error) {
	for {
		if c.step >= c.maxSteps {
			c.res.Status = engine.Failed
			c.res.Diagnostics = append(c.res.Diagnostics, fmt.Sprintf("the model is still calling tools after %d requests, the most a turn may send (max_steps %d)", c.step, c.maxSteps))
			return nil, nil
		}
		body := c.body(ctx)
		c.t.Progress(engine.Progress{Activity: "waiting for " + c.model, Tokens: c.x.Ledger.Tokens()})
		if ctx.Err() != nil { // a budget the progress crossed, a timeout
			return nil, context.Cause(ctx)
		}
		before := c.x.Usage()
		r, err := c.x.Send(ctx, body)
		if r == nil {
			if c.protocol == ProtocolNative && !c.refused && refusesTools(c.x.Status) && ctx.Err() == nil {
				c.refused = true
				c.notes = append(c.notes, fmt.Sprintf("the server refused a request with tools (HTTP %d): tools are called by the text protocol", c.x.Status))
				c.res.Status, c.res.Diagnostics, c.res.Stderr = "", nil, ""
				c.useText()
				continue
			}
			c.res.Diagnostics = append(c.notes, c.res.Diagnostics...)
			return nil, err
		}
		c.step++
		*c.res.Usage.Turns = int64(c.step)
		c.steps = append(c.steps, r.Steps()...)
		if ctx.Err() != nil {
			return r, nil
		}
		if msg := truncated(body, r.PromptTokens()); msg != "" {
			r.Discard()
			c.res.Status = engine.Failed
			c.res.Diagnostics = append(c.notes, msg)
			return nil, nil
		}
		calls := c.callsOf(r)
		if calls == nil {
			r.Offered(c.protocol == ProtocolNative)
			st, diag := r.Outcome()
			c.res.Status, c.res.Diagnostics = st, append(c.notes, diag...)
			return r, nil
		}
		said := r.Text()
		r.Discard()
		if err := c.serve(ctx, said, calls, r.ID(), spentSince(c.x.Usage(), before)); err != nil {
			c.res.Status = engine.Failed
			c.res.Diagnostics = append(c.res.Diagnostics, err.Error())
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
}

// refusesTools says an HTTP status is a server's refusal of the request's
// tools (a bad request, an unprocessable one, one it does not implement),
// rather than of the request as such.
func refusesTools(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusNotImplemented:
		return true
	}
	return false
}

// callsOf is the tool calls an answer makes, by the turn's protocol; a
// model that writes a call as text under the native protocol switches the
// turn to the text protocol. nil: the answer is the turn's answer.
func (c *conv) callsOf(r *openai.Round) []openai.Call {
	if c.protocol == ProtocolNative {
		if calls := r.Calls(); calls != nil {
			return calls
		}
	}
	if st, _ := r.Outcome(); st != engine.Completed {
		return nil
	}
	// A call written as text under the native protocol is taken only
	// when it ends the answer: an answer may show a call it does not make.
	name, args, ok := parseText(r.Text(), c.names(), c.protocol == ProtocolNative)
	if !ok {
		return nil
	}
	if c.protocol == ProtocolNative {
		c.notes = append(c.notes, "the model wrote a tool call as text: tools are called by the text protocol")
		c.useText()
	}
	var call openai.Call
	call.ID, call.Type = fmt.Sprintf("text_%d", c.seq+1), "function"
	call.Function.Name, call.Function.Arguments = name, args
	return []openai.Call{call}
}

// serve adds an answer's calls to the conversation, makes them one after
// another, journals each with its result, and adds the results.
func (c *conv) serve(ctx context.Context, said string, calls []openai.Call, response string, spent *record.Usage) error {
	if c.protocol == ProtocolNative {
		c.msgs = append(c.msgs, openai.Message{Role: "assistant", Content: said, ToolCalls: calls})
	} else {
		c.msgs = append(c.msgs, openai.Message{Role: "assistant", Content: said})
	}
	for i, call := range calls {
		c.t.Progress(engine.Progress{Activity: "using " + call.Function.Name, Tokens: c.x.Ledger.Tokens()})
		start := time.Now()
		result, isErr := c.call(ctx, call)
		if ctx.Err() != nil {
			return nil // the call was stopped: it is no result
		}
		c.seq++
		rec := record.ToolCall{Turn: c.turn, Opening: c.opening, Step: c.step, Seq: c.seq, Protocol: c.protocol,
			ID: call.ID, Name: call.Function.Name, Args: Truncate(call.Function.Arguments, ArgsLimit),
			Result: result, Error: isErr, WallMS: time.Since(start).Milliseconds(), Tree: snapshot(ctx, c.box.dir)}
		if i == 0 {
			rec.Said, rec.Response, rec.Usage = said, response, spent
			if len(calls) > 1 {
				for _, b := range calls {
					rec.Batch = append(rec.Batch, record.BatchCall{ID: b.ID, Name: b.Function.Name, Args: Truncate(b.Function.Arguments, ArgsLimit)})
				}
			}
		}
		if c.t.Tools != nil && c.t.Tools.Record != nil {
			if err := c.t.Tools.Record(rec); err != nil {
				return fmt.Errorf("%w: %v", errJournal, err)
			}
		}
		if c.protocol == ProtocolText { // the answer's steps name native calls only
			c.steps = append(c.steps, transcript.Step{Kind: "tool", Title: call.Function.Name, Text: call.Function.Arguments})
		}
		c.log.Record(map[string]any{"tool_result": map[string]any{"call_id": call.ID, "name": call.Function.Name, "content": result, "error": isErr}})
		c.steps = append(c.steps, transcript.Step{Kind: "result", Title: call.Function.Name, Text: result})
		c.msgs = append(c.msgs, c.resultMessage(call, result, isErr))
	}
	return nil
}

// resultMessage is a call's result as the conversation carries it.
func (c *conv) resultMessage(call openai.Call, result string, isErr bool) openai.Message {
	if c.protocol == ProtocolText {
		return openai.Message{Role: "user", Content: textResult(call.Function.Name, result, isErr)}
	}
	if isErr {
		result = "Error: " + result
	}
	return openai.Message{Role: "tool", Content: result, ToolCallID: call.ID}
}

// call makes one tool call: delegate through the run's socket, the others
// in the toolbox.
func (c *conv) call(ctx context.Context, call openai.Call) (string, bool) {
	if call.Function.Name == delegate.Tool && c.t.Delegate != nil {
		return delegate.Serve(ctx, c.t.Delegate.Socket, c.t.Delegate.Token, []byte(call.Function.Arguments))
	}
	return c.box.run(ctx, call.Function.Name, call.Function.Arguments)
}

// spentSince is what now reports past before: one step's usage.
func spentSince(now, before record.Usage) *record.Usage {
	sub := func(a, b *int64) *int64 {
		if a == nil {
			return nil
		}
		v := *a
		if b != nil {
			v -= *b
		}
		return &v
	}
	return &record.Usage{Input: sub(now.Input, before.Input), Output: sub(now.Output, before.Output),
		CacheRead: sub(now.CacheRead, before.CacheRead), CacheWrite: sub(now.CacheWrite, before.CacheWrite)}
}
