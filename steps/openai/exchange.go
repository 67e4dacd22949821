package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

// What a driver that runs its own loop over the chat completions API
// (steps/native) shares with this one: the messages, the request, the
// sending through the provider key's limiter, the stream's parsing and
// the turn's one usage ledger.

// Message is one chat message; Call a tool call as an assistant's message
// carries it.
type (
	Message = message
	Call    = wireCall
)

// Conversation is the messages of a turn's first request: the system
// message, the session's history, the turn text.
func Conversation(system string, history []Message, prompt string) []Message {
	return conversation(system, history, prompt)
}

// RequestBody builds one streaming chat completions request, offering
// tools when there are any and asking for the typed output's format.
func RequestBody(model string, msgs []Message, schema []byte, tools []any) []byte {
	return requestBody(model, msgs, schema, tools)
}

// ChatURL is the chat completions endpoint of the agent's server (base),
// else of the configured one.
func ChatURL(configured, base string) string { return chatURL(configured, base) }

// History is the conversation of one memory session, kept in a home.
type History = history

// LoadHistory returns the history of session in home, or an empty one for "".
func LoadHistory(home, agent, session string) (*History, error) {
	return loadHistory(home, agent, session)
}

// Keep appends a completed turn's exchange to h and writes it, redacted,
// into res.Session; what it could not keep goes to res.Diagnostics. A long
// answer is kept as the next turn is given it: its start and where the
// rest is.
func (h *history) Keep(t *engine.Turn, res *engine.TurnResult, secrets *secret.Redactor) {
	said := res.Output
	if res.File != "" {
		said += fmt.Sprintf("\n\n[… the whole answer, %d bytes, is in %s]", res.Size, res.File)
	}
	sess, err := h.save(t.Home, t.Agent.Name, t.Prompt, said, secrets)
	if err != nil {
		res.Diagnostics = append(res.Diagnostics, err.Error())
	}
	res.Session = sess
}

// Exchange is one turn's requests to one server: each through the
// provider key's limiter, each answer's usage into one ledger.
type Exchange struct {
	d                    *Driver
	t                    *engine.Turn
	log                  *transcript.Log
	res                  *engine.TurnResult
	endpoint, key, model string
	secrets              *secret.Redactor
	// Ledger is the turn's usage: every answer counted once, by its id.
	Ledger usage.Ledger
	// Status is the HTTP status of the last request the server refused.
	Status int
}

// NewExchange starts a turn's exchange with the server at endpoint.
// Refusals and failures are written into res (its Status and
// Diagnostics), as the openai driver's own turn does.
func (d *Driver) NewExchange(t *engine.Turn, log *transcript.Log, res *engine.TurnResult, endpoint, key, model string, secrets *secret.Redactor) *Exchange {
	return &Exchange{d: d, t: t, log: log, res: res, endpoint: endpoint, key: key, model: model, secrets: secrets}
}

// Round is one answer of the server, read whole.
type Round struct{ p *parser }

// Send sends one request and reads its answer (the transcript gets both).
// It returns nil when no answer came: then res says why, and the error
// is the turn's (a rate limit, a quota, a cancellation) or nil.
func (x *Exchange) Send(ctx context.Context, body []byte) (*Round, error) {
	x.log.Record(map[string]any{"request": map[string]any{"visit": x.t.Visit, "url": x.endpoint, "body": json.RawMessage(body)}})
	resp, tk, err := x.d.send(ctx, x.t, sendArgs{endpoint: x.endpoint, key: x.key, model: x.model, body: body, log: x.log, res: x.res, status: &x.Status})
	if resp == nil {
		return nil, err
	}
	p := roundParser(x.t.Progress, &x.Ledger)
	p.ledger.Open()
	p.text = transcript.NewAnswer(x.t.Home, x.t.Agent.Name, x.secrets)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		err = p.whole(resp.Body, x.log)
	} else {
		err = p.stream(resp.Body, x.log)
	}
	resp.Body.Close()
	tk.Done(ratelimit.Answer{Header: resp.Header})
	if err != nil && ctx.Err() == nil {
		p.diag = append(p.diag, fmt.Sprintf("reading the answer: %v", err))
	}
	return &Round{p: p}, nil
}

// Usage is what the turn's answers reported so far.
func (x *Exchange) Usage() record.Usage { return x.Ledger.Usage() }

// Text is the answer's text (its first engine.AnswerLimit bytes).
func (r *Round) Text() string { return r.p.text.String() }

// Calls are the tool calls the answer ended with, when it ended well
// asking for them (finish_reason tool_calls); else nil.
func (r *Round) Calls() []Call { return r.p.calls() }

// ID is the completion's id, "" when the server gave none.
func (r *Round) ID() string { return r.p.id }

// Finish is the answer's finish_reason.
func (r *Round) Finish() string { return r.p.finish }

// PromptTokens is the prompt's size as the server reported it, or nil.
func (r *Round) PromptTokens() *int64 { return r.p.prompt }

// Offered says the request offered tools (for Outcome's diagnostics).
func (r *Round) Offered(v bool) { r.p.offered = v }

// Outcome decides the answer's status (docs/drivers.md, Failures) and its
// diagnostics.
func (r *Round) Outcome() (engine.TurnStatus, []string) { return r.p.outcome() }

// Steps are what the answer did, for the readable transcript.
func (r *Round) Steps() []transcript.Step { return r.p.steps() }

// Result puts the answer's text (and its file, when long) into res.
func (r *Round) Result(res *engine.TurnResult) error { return r.p.text.Result(res, false) }

// Discard closes the answer's text and removes its file: the text of an
// answer that called tools is no answer.
func (r *Round) Discard() {
	_ = r.p.text.Close()
	if f := r.p.text.File(); f != "" {
		_ = os.Remove(f)
	}
}

// Close closes the answer's text.
func (r *Round) Close() error { return r.p.text.Close() }
