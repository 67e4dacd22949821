package native

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/internal/sandbox"
	"github.com/flowrun/flow/steps/openai"
	"github.com/flowrun/flow/steps/transcript"
)

// DefaultMaxSteps bounds a turn's requests when the agent says no
// max_steps.
const DefaultMaxSteps = 50

// Options configure the native driver.
type Options struct {
	// BaseURL is the server used when the agent names none; "" means
	// openai.DefaultBaseURL.
	BaseURL string
	// APIKeyEnv names the variable that holds the key when the agent
	// names none; "" means openai.DefaultKeyEnv.
	APIKeyEnv string
	// NumCtx is the context size sent to an Ollama server (options.num_ctx);
	// 0 means one sized to the turn's conversation.
	NumCtx int
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Limits paces the requests per provider key; nil means
	// ratelimit.Default.
	Limits *ratelimit.Registry
}

// Driver runs native agents. It is safe for concurrent use.
type Driver struct {
	opts   Options
	chat   *openai.Driver
	ollama sync.Map // server root → bool: it is an Ollama server
}

var _ engine.Driver = (*Driver)(nil)

// New returns a Driver with the given options.
func New(opts Options) *Driver {
	opts.BaseURL = cmp.Or(opts.BaseURL, openai.DefaultBaseURL)
	opts.APIKeyEnv = cmp.Or(opts.APIKeyEnv, openai.DefaultKeyEnv)
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	return &Driver{opts: opts, chat: openai.New(openai.Options{BaseURL: opts.BaseURL, APIKeyEnv: opts.APIKeyEnv,
		HTTPClient: opts.HTTPClient, Limits: opts.Limits})}
}

// tools is what an agent may use: its tools: list, or read alone (the
// read-only set) when it gives none.
func tools(listed []string) []string {
	if listed == nil {
		return []string{ToolRead}
	}
	return listed
}

// Turn runs one turn: requests to the server and the tool calls its
// answers make, until an answer calls none (docs/native.md).
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	a := t.Agent
	if a == nil {
		return nil, fmt.Errorf("starting native turn: %w: no agent", engine.ErrUnavailable)
	}
	start := time.Now()
	zero := int64(0)
	res := &engine.TurnResult{Usage: record.Usage{Turns: &zero}}
	model := cmp.Or(t.Model, a.Model)
	key := os.Getenv(cmp.Or(a.APIKeyEnv, d.opts.APIKeyEnv))
	secrets := t.Secrets.With(key)
	endpoint := openai.ChatURL(d.opts.BaseURL, a.BaseURL)
	log, err := transcript.Open(t.Home, a.Name, transcript.Header{Visit: t.Visit, Driver: "native", Model: model,
		Session: t.Session, Started: start, System: a.Instructions, Prompt: t.Prompt}, t.Secrets)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	log.Redact(key)
	res.Transcript = log.Path()
	c := &conv{d: d, t: t, log: log, res: res, model: model, secrets: secrets, tools: tools(a.Tools), url: endpoint,
		maxSteps: cmp.Or(a.MaxSteps, DefaultMaxSteps)}
	finish := func(err error) (*engine.TurnResult, error) {
		if c.x != nil {
			turns := res.Usage.Turns
			res.Usage = c.x.Usage()
			res.Usage.Turns = turns
		}
		res.Usage.WallMS = time.Since(start).Milliseconds()
		if terr := log.End(res, c.steps); terr != nil {
			res.Diagnostics = append(res.Diagnostics, terr.Error())
		}
		return res, err
	}
	if model == "" {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, "no model: neither the run, the flow nor the agent names one, and the native driver has no default model")
		return finish(nil)
	}
	c.box = &toolbox{dir: t.WorkDir, runID: t.RunID, confine: a.Sandbox != "off", tools: c.tools}
	if c.box.dir == "" {
		c.box.dir, _ = os.Getwd()
	}
	if c.box.confine && contains(c.tools, ToolBash) {
		if kind, _, why := sandbox.Detect(); kind == sandbox.None {
			res.Status = engine.Failed
			msg := fmt.Sprintf("refused: agent %s runs bash in a sandbox and none works here (%s); install bubblewrap, or say sandbox: off in the agent file to run its commands unconfined", a.Name, why)
			res.Diagnostics = append(res.Diagnostics, msg)
			return finish(fmt.Errorf("%w: %s", engine.ErrUnavailable, msg))
		}
	}
	hist, err := openai.LoadHistory(t.Home, a.Name, t.Session)
	if err != nil {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, err.Error())
		return finish(nil)
	}
	c.x = d.chat.NewExchange(t, log, res, endpoint, key, model, secrets)
	c.begin(ctx, openai.Conversation(a.Instructions, hist.Messages, t.Prompt))
	r, err := c.run(ctx)
	if r == nil {
		if ctx.Err() != nil {
			return aborted(ctx, res, finish)
		}
		return finish(err)
	}
	defer r.Close()
	if ctx.Err() != nil {
		return aborted(ctx, res, finish)
	}
	if err := r.Result(res); err != nil {
		res.Diagnostics = append(res.Diagnostics, "storing the answer: "+err.Error())
	}
	if res.Status != engine.Completed {
		return finish(nil)
	}
	hist.Keep(t, res, secrets)
	return finish(nil)
}

func aborted(ctx context.Context, res *engine.TurnResult, finish func(error) (*engine.TurnResult, error)) (*engine.TurnResult, error) {
	res.Status = engine.Aborted
	res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("the turn was stopped: %v", context.Cause(ctx)))
	return finish(context.Cause(ctx))
}

// errJournal wraps a tool call the journal could not keep: the turn
// fails rather than make calls a resume would not know of.
var errJournal = errors.New("journaling a tool call")

func newTurnID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "turn-" + hex.EncodeToString(b[:])
}
