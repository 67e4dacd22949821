package codex

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/delegate"
	"github.com/flowrun/flow/steps/meter"
	"github.com/flowrun/flow/steps/transcript"
)

// DefaultKeyEnv is the environment variable that holds the key of a
// configured server when the agent names none.
const DefaultKeyEnv = "OPENAI_API_KEY"

// Options configure the codex driver. The zero value runs `codex` from PATH
// against Codex's own configured provider, with the user's own CODEX_HOME.
type Options struct {
	// Binary is the Codex program; "" means "codex", looked up in PATH.
	Binary string
	// BaseURL, when set, is an OpenAI Responses server that Codex is
	// pointed at when the agent names none (see the package documentation).
	BaseURL string
	// APIKeyEnv names the environment variable that holds that server's key
	// when the agent names none; "" means DefaultKeyEnv.
	APIKeyEnv string
	// MaxRetries bounds Codex's own retries of a failed request, and of a
	// failed stream, against a configured server. flow's `retry:` is the
	// retry policy, so zero means none (the configuration's default is 1).
	MaxRetries int
	// CodexHome, when set, is CODEX_HOME for every turn; "" means the
	// user's own, or a private one in the scope's home with a server.
	CodexHome string
	// Grace is the time between SIGTERM and SIGKILL on cancellation; zero
	// means proc.DefaultGrace.
	Grace time.Duration
}

// Driver runs codex agents. It holds only settings: it is immutable and
// safe for concurrent use. Its zero value is not usable; call New.
type Driver struct {
	opts Options
}

var _ engine.Driver = (*Driver)(nil)

// New returns a Driver with the given options.
func New(opts Options) *Driver {
	if opts.Binary == "" {
		opts.Binary = "codex"
	}
	if opts.APIKeyEnv == "" {
		opts.APIKeyEnv = DefaultKeyEnv
	}
	opts.MaxRetries = max(opts.MaxRetries, 0)
	if opts.Grace == 0 {
		opts.Grace = proc.DefaultGrace
	}
	return &Driver{opts: opts}
}

// Turn runs one codex turn, paced by its provider key's limiter
// (agentcli.Paced). See the package documentation.
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	a := t.Agent
	if a == nil {
		return nil, fmt.Errorf("starting codex turn: %w: no agent", engine.ErrUnavailable)
	}
	keyEnv, base, model := cmp.Or(a.APIKeyEnv, d.opts.APIKeyEnv), cmp.Or(a.BaseURL, d.opts.BaseURL), cmp.Or(t.Model, a.Model)
	pk := ratelimit.Key{Driver: "codex", BaseURL: base, Key: ratelimit.Fingerprint(os.Getenv(keyEnv)), Model: model}
	return agentcli.Paced(ctx, t, pk, func(ctx context.Context) (*engine.TurnResult, error) { return d.turn(ctx, t) })
}

func (d *Driver) turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	a := t.Agent
	start := time.Now()
	one := int64(1)
	model := t.Model
	if model == "" {
		model = a.Model
	}
	keyEnv := a.APIKeyEnv
	if keyEnv == "" {
		keyEnv = d.opts.APIKeyEnv
	}
	base := a.BaseURL
	if base == "" {
		base = d.opts.BaseURL
	}
	// Codex runs in the working directory: every path it gets is absolute.
	home, err := filepath.Abs(t.Home)
	if err != nil {
		return nil, fmt.Errorf("finding the home: %w", err)
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("making the home: %w", err)
	}
	codexHome := d.opts.CodexHome
	if codexHome == "" && base != "" {
		codexHome = filepath.Join(home, "codex-home")
	}
	if codexHome != "" {
		if codexHome, err = filepath.Abs(codexHome); err != nil {
			return nil, fmt.Errorf("finding the codex home: %w", err)
		}
	}
	if codexHome != "" {
		if err := os.MkdirAll(codexHome, 0o700); err != nil {
			return nil, fmt.Errorf("making the codex home: %w", err)
		}
	}
	var schemaFile string
	if t.OutputSchema != nil {
		schemaFile = filepath.Join(home, a.Name+".output-schema.json")
		if err := os.WriteFile(schemaFile, t.OutputSchema, 0o644); err != nil {
			return nil, fmt.Errorf("writing the output schema: %w", err)
		}
	}
	// Codex refuses a provider whose env_key is unset; a local server may
	// need no key at all, so an unset key is left out.
	providerKey := keyEnv
	if os.Getenv(keyEnv) == "" {
		providerKey = ""
	}
	// Codex's progress comes from its stream and from the meter, each on
	// a goroutine of its own.
	var progressMu sync.Mutex
	progress := func(p engine.Progress) {
		progressMu.Lock()
		defer progressMu.Unlock()
		t.Progress(p)
	}
	s := newStream(progress, agentcli.NewCalls(t.Tools, "codex"))
	s.before = threadBefore(home, a.Name, t.Session)
	codexBase := base
	var mt *meter.Meter
	if base != "" {
		if mt, err = s.meter(ctx, responsesBase(base), t.Affords); err != nil {
			return nil, fmt.Errorf("preparing codex: %w", err)
		}
		defer mt.Close()
		codexBase = mt.URL()
	}
	args := arguments(t, model, codexBase, providerKey, schemaFile, d.opts.MaxRetries)
	var delegateEnv []string
	if t.Delegate != nil {
		var more []string
		if more, delegateEnv, err = mcpArguments(t.Delegate); err != nil {
			return nil, fmt.Errorf("preparing codex: %w", err)
		}
		args = append(args[:len(args)-1], append(more, "-")...)
	}

	log, err := transcript.Open(home, a.Name, transcript.Header{Visit: t.Visit, Driver: "codex", Model: model,
		Session: t.Session, Started: start, System: a.Instructions, Prompt: t.Prompt}, t.Secrets)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	log.Redact(os.Getenv(keyEnv)) // also when its name does not say it is a key
	log.Record(map[string]any{"command": map[string]any{"visit": t.Visit, "argv": append([]string{d.opts.Binary}, args...), "codex_home": codexHome, "base_url": base}})

	var env []string // nil: the flow process's
	if codexHome != "" || delegateEnv != nil {
		var set []string
		if codexHome != "" {
			set = append(set, "CODEX_HOME="+codexHome)
		}
		env = agentcli.Environ([]string{"CODEX_HOME", delegate.EnvSocket, delegate.EnvToken}, append(set, delegateEnv...)...)
	}
	progress(engine.Progress{Activity: "starting codex"})
	exit, err := agentcli.Run(ctx, agentcli.Command{
		Name: "codex", Binary: d.opts.Binary, Args: args, Env: env, Dir: t.WorkDir, Prompt: t.Prompt,
		RunID: t.RunID, Grace: d.opts.Grace, Transcript: log, Started: bindOf(t),
		Lingering: func() { progress(engine.Progress{Activity: "answer received, codex did not exit; ending it"}) },
	}, s.line)
	if err != nil {
		return nil, err
	}

	res := &engine.TurnResult{Output: s.answer, Stderr: exit.Stderr, Session: s.thread, Transcript: log.Path()}
	if res.Session == "" {
		res.Session = t.Session
	}
	res.Usage = s.ledger.Usage()
	res.Usage.Turns = &one
	res.Usage.WallMS = time.Since(start).Milliseconds()
	var rerr error
	switch why := mt.Refusal(); {
	case ctx.Err() != nil:
		// Only what the stream said before the cancel: the rest of the
		// outcome (no turn.completed, no answer) is the cancel's doing.
		res.Status = engine.Aborted
		res.Diagnostics = append(s.diag, fmt.Sprintf("codex was stopped: %v", context.Cause(ctx)))
		rerr = context.Cause(ctx)
	case why != "":
		// The meter refused a request the budget could not afford: the
		// turn fails `budget`, with what it spent until then.
		res.Status, res.Diagnostics = engine.Failed, append(s.diag, why)
		rerr = fmt.Errorf("%w: %s", engine.ErrBudget, why)
	default:
		res.Status, res.Diagnostics = s.outcome(exit.Problem())
		if n := exit.Lingering(); n != "" {
			res.Diagnostics = append(res.Diagnostics, n)
		}
	}
	res.Diagnostics = append(res.Diagnostics, mt.Problems()...)
	if s.after == nil && mt != nil && s.ledger.Calls() > 0 {
		// Ended before turn.completed: the thread grew by what the meter
		// counted, which the thread's next turn must not count again.
		s.after = ptr(s.before.plus(s.ledger.Usage()))
	}
	if s.after != nil {
		if err := saveThread(home, a.Name, res.Session, *s.after); err != nil {
			res.Diagnostics = append(res.Diagnostics, "keeping the thread's usage: "+err.Error())
		}
	}
	if err := log.End(res, s.steps); err != nil {
		res.Diagnostics = append(res.Diagnostics, err.Error())
	}
	return res, rerr
}

// meter opens the turn's meter in front of base (package meter): each
// request's usage goes to the stream's ledger and the turn's progress, as
// the stream's own figures do, under the meter's number for the request
// (the ledger then counts each request once, retries included); affords
// (Turn.Affords, nil for none) is asked before each request with what the
// turn spent so far.
func (s *stream) meter(ctx context.Context, base string, affords func(live, next int64) bool) (*meter.Meter, error) {
	report := func(r meter.Report) {
		s.ledger.Report("request "+strconv.Itoa(r.Request), r.Call)
		s.progress(engine.Progress{Activity: "model replied", Tokens: s.ledger.Tokens()})
	}
	var may func(int64) bool
	if affords != nil {
		may = func(next int64) bool { return affords(s.ledger.Tokens(), next) }
	}
	return meter.Start(ctx, base, report, may)
}

// arguments builds the codex command line of a turn (without the binary).
// keyEnv is "" for a server that gets no key.
func arguments(t *engine.Turn, model, base, keyEnv, schemaFile string, retries int) []string {
	a := t.Agent
	args := []string{"exec"}
	if t.Session != "" {
		args = append(args, "resume", t.Session)
	}
	sandbox := "read-only"
	for _, tool := range a.Tools {
		if slices.Contains([]string{"write", "edit", "bash"}, strings.ToLower(strings.TrimSpace(tool))) {
			sandbox = "workspace-write"
		}
	}
	// Codex snapshots the shell's environment into CODEX_HOME, which is
	// in the run directory; the environment holds the API key, and no
	// secret may be written there.
	args = append(args, "--json", "--skip-git-repo-check",
		"-c", `approval_policy="never"`,
		"-c", "sandbox_mode="+strconv.Quote(sandbox),
		"-c", "features.shell_snapshot=false")
	if a.Instructions != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(a.Instructions))
	}
	if a.Thinking != "" {
		args = append(args, "-c", "model_reasoning_effort="+tomlString(effort(a.Thinking)))
	}
	if base != "" {
		args = append(args,
			"-c", `model_provider="flow"`,
			"-c", `model_providers.flow.name="flow"`,
			"-c", "model_providers.flow.base_url="+tomlString(responsesBase(base)),
			"-c", `model_providers.flow.wire_api="responses"`,
		)
		if keyEnv != "" {
			args = append(args, "-c", "model_providers.flow.env_key="+tomlString(keyEnv))
		}
		args = append(args,
			"-c", "model_providers.flow.request_max_retries="+strconv.Itoa(retries),
			"-c", "model_providers.flow.stream_max_retries="+strconv.Itoa(retries),
		)
	}
	if model != "" {
		args = append(args, "-m", model)
	}
	if schemaFile != "" {
		args = append(args, "--output-schema", schemaFile)
	}
	return append(args, "-")
}

// effort maps flow's thinking levels onto Codex's reasoning efforts.
func effort(thinking string) string {
	switch thinking {
	case "off", "none":
		return "minimal"
	case "max":
		return "xhigh"
	}
	return thinking
}

// responsesBase returns the base URL Codex appends /responses to; a URL
// with no path gets /v1.
func responsesBase(base string) string {
	base = strings.TrimRight(base, "/")
	if u, err := url.Parse(base); err == nil && u.Path == "" {
		base += "/v1"
	}
	return base
}

// tomlString quotes s as a TOML basic string (JSON string escapes are valid
// TOML ones).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// bindOf is the turn's delegation's Bind, nil when it may not delegate.
func bindOf(t *engine.Turn) func(int) {
	if t.Delegate == nil {
		return nil
	}
	return t.Delegate.Bind
}
