package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/transcript"
)

// DefaultBaseURL is the server used when neither the agent nor the
// configuration names one.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultKeyEnv is the environment variable that holds the key when the
// agent names none.
const DefaultKeyEnv = "OPENAI_API_KEY"

// Options configure the openai driver. The zero value talks to
// DefaultBaseURL with the key in DefaultKeyEnv, unless an agent names its own
// server or variable.
type Options struct {
	// BaseURL is the server used when the agent names none; "" means
	// DefaultBaseURL. An agent's base_url still wins.
	BaseURL string
	// APIKeyEnv names the environment variable that holds the key when the
	// agent names none; "" means DefaultKeyEnv.
	APIKeyEnv string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Limits paces the requests per provider key; nil means
	// ratelimit.Default, the process-wide registry.
	Limits *ratelimit.Registry
	// RateRetries bounds how often a turn's request is sent again after a
	// refusal for now; 0 means DefaultRateRetries, a negative number none.
	RateRetries int
}

// Driver runs openai agents. It holds only settings: it is immutable and
// safe for concurrent use. Its zero value is not usable; call New.
type Driver struct {
	opts Options
}

var _ engine.Driver = (*Driver)(nil)

// New returns a Driver with the given options.
func New(opts Options) *Driver {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = DefaultKeyEnv
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Limits == nil {
		opts.Limits = ratelimit.Default
	}
	switch {
	case opts.RateRetries == 0:
		opts.RateRetries = DefaultRateRetries
	case opts.RateRetries < 0:
		opts.RateRetries = 0
	}
	return &Driver{opts: opts}
}

// Turn sends one turn to the server. See the package documentation for the
// outcome, usage, memory and transcript.
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	a := t.Agent
	if a == nil {
		return nil, fmt.Errorf("starting openai turn: %w: no agent", engine.ErrUnavailable)
	}
	start := time.Now()
	one := int64(1) // a turn is one turn until a second round is answered
	res := &engine.TurnResult{Usage: record.Usage{Turns: &one}}
	model := t.Model
	if model == "" {
		model = a.Model
	}
	keyEnv := a.APIKeyEnv
	if keyEnv == "" {
		keyEnv = d.opts.APIKeyEnv
	}
	key := os.Getenv(keyEnv)
	secrets := t.Secrets.With(key) // the key is the run's secret whatever its variable is called
	endpoint := chatURL(d.opts.BaseURL, a.BaseURL)

	log, err := transcript.Open(t.Home, a.Name, transcript.Header{Visit: t.Visit, Driver: "openai", Model: model,
		Session: t.Session, Started: start, System: a.Instructions, Prompt: t.Prompt}, t.Secrets)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	log.Redact(key)
	res.Transcript = log.Path()
	var steps []transcript.Step
	finish := func(err error) (*engine.TurnResult, error) {
		res.Usage.WallMS = time.Since(start).Milliseconds()
		if terr := log.End(res, steps); terr != nil {
			res.Diagnostics = append(res.Diagnostics, terr.Error())
		}
		return res, err
	}
	if model == "" {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, "no model: neither the run, the flow nor the agent names one, and the openai driver has no default model")
		return finish(nil)
	}

	hist, err := loadHistory(t.Home, a.Name, t.Session)
	if err != nil {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, err.Error())
		return finish(nil)
	}
	r := &rounds{d: d, t: t, log: log, res: res, endpoint: endpoint, key: key, model: model, secrets: secrets,
		msgs: conversation(a.Instructions, hist.Messages, t.Prompt), calls: agentcli.NewCalls(t.Tools, "openai")}
	p, err := r.run(ctx)
	steps = r.steps
	if p == nil { // no answer: the request failed or was stopped
		if ctx.Err() != nil {
			return d.aborted(ctx, res, finish)
		}
		return finish(err)
	}
	defer p.text.Close()
	if ctx.Err() != nil {
		p.setUsage(res) // what the stream had reported when it was stopped
		return d.aborted(ctx, res, finish)
	}
	if err := p.text.Result(res, false); err != nil {
		p.diag = append(p.diag, "storing the answer: "+err.Error())
	}
	p.setUsage(res)
	res.Status, res.Diagnostics = p.outcome()
	if res.Status != engine.Completed {
		return finish(nil)
	}
	hist.Keep(t, res, secrets)
	return finish(nil)
}

func (d *Driver) aborted(ctx context.Context, res *engine.TurnResult, finish func(error) (*engine.TurnResult, error)) (*engine.TurnResult, error) {
	res.Status = engine.Aborted
	res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("the request was stopped: %v", context.Cause(ctx)))
	return finish(context.Cause(ctx))
}

// chatURL returns the chat completions endpoint of the agent's server, else
// of the configured one.
func chatURL(configured, agent string) string {
	base := agent
	if base == "" {
		base = configured
	}
	base = strings.TrimRight(base, "/")
	if u, err := url.Parse(base); err == nil && u.Path == "" {
		base += "/v1"
	}
	return base + "/chat/completions"
}

// serverMessage is the message of an error body, or "".
func serverMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		return e.Error.Message
	}
	return ""
}

// httpError describes a non-200 answer with the server's own message.
func httpError(resp *http.Response, body []byte) string {
	msg := strings.TrimSpace(string(body))
	if m := serverMessage(body); m != "" {
		msg = m
	}
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	s := fmt.Sprintf("the server answered %s", resp.Status)
	if msg != "" {
		s += ": " + msg
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		s += " (retry after " + ra + ")"
	}
	return s
}

// redactErr renders err with the key's value removed (a URL in an error
// could carry it if a user put it there).
func redactErr(err error, key string) string {
	s := err.Error()
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return s
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "chat-" + hex.EncodeToString(b[:])
}
