package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/delegate"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

// MaxRounds bounds the requests of one turn that offers tools: a model
// that still calls tools in its last allowed answer fails the turn
// ("still requesting tools") rather than running on.
const MaxRounds = 16

// rounds is one turn's exchange with the server: a request, and while the
// model answers with calls of the tools offered (delegate, when the turn
// may delegate), the calls' results and the next request. Every round's
// usage goes into one ledger, each answer counted once by its id.
type rounds struct {
	d                    *Driver
	t                    *engine.Turn
	log                  *transcript.Log
	res                  *engine.TurnResult
	endpoint, key, model string
	secrets              *secret.Redactor
	msgs                 []message
	ledger               usage.Ledger
	steps                []transcript.Step
	calls                *agentcli.Calls // the turn's tool calls, journalled for its trace
	answer               string          // the id of the last answer that made calls
}

// run sends rounds until the model answers without calling a tool, or
// MaxRounds were sent. It returns the parser of the last answer, its text
// open, or nil when a request got no answer: then res says why and the
// error is send's.
func (r *rounds) run(ctx context.Context) (*parser, error) {
	tools := offered(r.t.Delegate)
	for round := 1; ; round++ {
		body := requestBody(r.model, r.msgs, r.t.OutputSchema, tools)
		r.log.Record(map[string]any{"request": map[string]any{"visit": r.t.Visit, "url": r.endpoint, "body": json.RawMessage(body)}})
		r.t.Progress(engine.Progress{Activity: "waiting for " + r.model, Tokens: r.ledger.Tokens()})
		resp, tk, err := r.d.send(ctx, r.t, sendArgs{endpoint: r.endpoint, key: r.key, model: r.model, body: body, log: r.log, res: r.res})
		if resp == nil {
			r.setUsage()
			return nil, err
		}
		*r.res.Usage.Turns = int64(round)
		p := roundParser(r.t.Progress, &r.ledger)
		p.offered = tools != nil
		p.ledger.Open() // the server answers: the request is billed
		p.text = transcript.NewAnswer(r.t.Home, r.t.Agent.Name, r.secrets)
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			err = p.whole(resp.Body, r.log)
		} else {
			err = p.stream(resp.Body, r.log)
		}
		resp.Body.Close()
		// The request held its slot of the limiter until its answer was read.
		tk.Done(ratelimit.Answer{Header: resp.Header})
		if err != nil && ctx.Err() == nil {
			p.diag = append(p.diag, fmt.Sprintf("reading the answer: %v", err))
		}
		r.steps = append(r.steps, p.steps()...)
		calls := p.calls()
		if ctx.Err() != nil || tools == nil || calls == nil {
			return p, nil
		}
		if round == MaxRounds {
			p.diag = append(p.diag, fmt.Sprintf("the model called tools in all %d rounds a turn may have", MaxRounds))
			return p, nil
		}
		r.msgs = append(r.msgs, message{Role: "assistant", Content: p.text.String(), ToolCalls: calls})
		// Text before tool calls is no answer: a long one's file goes (its
		// start goes on in the conversation, the whole in the transcript).
		_ = p.text.Close()
		if f := p.text.File(); f != "" {
			_ = os.Remove(f)
		}
		r.made(round, p, calls)
		r.serve(ctx, calls)
	}
}

// made journals that the answer of round made calls, with its usage: the
// turn's trace has a chat span per request and an execute_tool span per
// call (docs/tracing.md). The answer is known by its id, or by its round
// when the server gave none or the last one's.
func (r *rounds) made(round int, p *parser, calls []wireCall) {
	id := p.id
	if id == "" || id == r.answer {
		id = fmt.Sprintf("round %d", round)
	}
	r.answer = id
	if p.reported != nil {
		r.calls.Usage(id, *p.reported)
	}
	for _, c := range calls {
		r.calls.Use(id, c.ID, c.Function.Name)
	}
}

// setUsage puts what the rounds so far reported into res.
func (r *rounds) setUsage() {
	turns := r.res.Usage.Turns
	r.res.Usage = r.ledger.Usage()
	r.res.Usage.Turns = turns
}

// serve runs the calls of one answer, at once (a model that starts three
// scouts gets them side by side, within the host's limits), and adds
// their results to the conversation in the calls' order.
func (r *rounds) serve(ctx context.Context, calls []wireCall) {
	results := make([]message, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		r.t.Progress(engine.Progress{Activity: "using " + c.Function.Name, Tokens: r.ledger.Tokens()})
		wg.Go(func() {
			text, isErr := r.call(ctx, c)
			r.calls.Result(c.ID, isErr)
			if isErr {
				text = "Error: " + text
			}
			results[i] = message{Role: "tool", Content: text, ToolCallID: c.ID}
		})
	}
	wg.Wait()
	for i, m := range results {
		r.log.Record(map[string]any{"tool_result": map[string]any{"call_id": m.ToolCallID, "name": calls[i].Function.Name, "content": m.Content}})
		r.steps = append(r.steps, transcript.Step{Kind: "result", Title: calls[i].Function.Name, Text: m.Content})
	}
	r.msgs = append(r.msgs, results...)
}

// call runs one tool call: delegate is the only tool there is.
func (r *rounds) call(ctx context.Context, c wireCall) (string, bool) {
	if c.Function.Name != delegate.Tool {
		return fmt.Sprintf("there is no tool %q; the only tool is %s", c.Function.Name, delegate.Tool), true
	}
	return delegate.Serve(ctx, r.t.Delegate.Socket, r.t.Delegate.Token, []byte(c.Function.Arguments))
}

// offered is the tools a turn offers: delegate when it may delegate, else
// none.
func offered(d *engine.Delegation) []any {
	if d == nil {
		return nil
	}
	return []any{map[string]any{"type": "function", "function": map[string]any{
		"name": delegate.Tool, "description": delegate.Description, "parameters": delegate.Schema(d.Agents),
	}}}
}

// calls is the tool calls an answer ends with, in order, when it ended
// well asking for them; else nil.
func (p *parser) calls() []wireCall {
	if !p.done || len(p.diag) > 0 || (p.finish != "tool_calls" && p.finish != "function_call") || len(p.order) == 0 {
		return nil
	}
	out := make([]wireCall, 0, len(p.order))
	for n, i := range p.order {
		tc := p.tools[i]
		w := wireCall{ID: tc.id, Type: "function"}
		if w.ID == "" {
			w.ID = fmt.Sprintf("call_%d", n)
		}
		w.Function.Name, w.Function.Arguments = tc.name, tc.args
		out = append(out, w)
	}
	return out
}
