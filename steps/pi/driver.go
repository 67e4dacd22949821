package pi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/flowrun/flow/steps/delegate"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/steps/agentcli"
)

// Options configure the pi driver. The zero value runs `pi` from PATH with
// the user's own configuration (~/.pi/agent, or $PI_CODING_AGENT_DIR).
type Options struct {
	// Binary is the pi program; "" means "pi", looked up in PATH.
	Binary string
	// AgentDir, when set, is pi's configuration directory
	// (PI_CODING_AGENT_DIR) for every turn. It is ignored when BaseURL is set.
	AgentDir string
	// BaseURL, when set, points pi at a model server: each turn runs with a
	// private agent directory holding a models.json with one provider named
	// Provider (default "flow") at this URL, as pi's own baseUrl (with /v1
	// for the OpenAI APIs, without it for anthropic-messages), and a
	// settings.json that bounds pi's retries to MaxRetries. The user's
	// ~/.pi is then never read or written.
	BaseURL string
	// API is that provider's API: "openai-completions" (the default),
	// "openai-responses" or "anthropic-messages".
	API string
	// APIKeyEnv names the environment variable that holds the server's key.
	// Only its name is written to models.json: pi reads the value itself.
	APIKeyEnv string
	// Provider names the provider written for BaseURL; "" means "flow".
	Provider string
	// MaxRetries bounds pi's own retries of a failed request when the driver
	// writes the settings (BaseURL); flow's `retry:` is the retry policy, so
	// zero means pi does not retry.
	MaxRetries int
	// Env is added to pi's environment (after the flow process's own), e.g.
	// the variable APIKeyEnv names. It is never written anywhere.
	Env []string
	// Grace is the time between SIGTERM and SIGKILL on cancellation; zero
	// means proc.DefaultGrace.
	Grace time.Duration
}

// Driver runs pi agents. It holds only settings: it is immutable and safe
// for concurrent use. Its zero value is not usable; call New.
type Driver struct {
	opts Options
}

var _ engine.Driver = (*Driver)(nil)

// New returns a Driver with the given options.
func New(opts Options) *Driver {
	if opts.Binary == "" {
		opts.Binary = "pi"
	}
	if opts.Provider == "" {
		opts.Provider = "flow"
	}
	if opts.API == "" {
		opts.API = "openai-completions"
	}
	return &Driver{opts: opts}
}

// Turn runs one pi turn, paced by its provider key's limiter
// (agentcli.Paced). See the package documentation.
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if t.Agent == nil {
		return nil, errors.New("running pi: the turn has no agent")
	}
	var key string
	if d.opts.APIKeyEnv != "" {
		key, _ = agentcli.Lookup(d.opts.Env, d.opts.APIKeyEnv)
	}
	pk := ratelimit.Key{Driver: "pi", BaseURL: d.opts.BaseURL, Key: ratelimit.Fingerprint(key), Model: t.Model}
	return agentcli.Paced(ctx, t, pk, func(ctx context.Context) (*engine.TurnResult, error) { return d.turn(ctx, t) })
}

func (d *Driver) turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	scratch, err := os.MkdirTemp("", "flow-pi-")
	if err != nil {
		return nil, fmt.Errorf("preparing pi: %w", err)
	}
	defer os.RemoveAll(scratch)
	args, env, err := d.setup(t, scratch)
	if err != nil {
		return nil, fmt.Errorf("preparing pi: %w", err)
	}
	var key string // redacted from the transcript
	if d.opts.APIKeyEnv != "" {
		key, _ = agentcli.Lookup(d.opts.Env, d.opts.APIKeyEnv)
	}
	return agentcli.Turn(ctx, t, agentcli.Command{
		Name: "pi", Binary: d.opts.Binary, Args: args, Env: env, Dir: t.WorkDir, Prompt: t.Prompt,
		RunID: t.RunID, Grace: d.opts.Grace,
	}, newParser(t.Progress, agentcli.NewCalls(t.Tools, "pi")), key)
}

// setup writes the turn's files into scratch and returns pi's arguments and
// environment.
func (d *Driver) setup(t *engine.Turn, scratch string) (args, env []string, err error) {
	args = []string{"--mode", "json", "-p"}
	agentDir := d.opts.AgentDir
	model := t.Model
	if d.opts.BaseURL != "" {
		agentDir = filepath.Join(scratch, "agent")
		id := strings.TrimPrefix(model, d.opts.Provider+"/")
		if id == "" {
			id = "default"
		}
		if err := d.writeAgentDir(agentDir, id, t.Agent.Thinking != ""); err != nil {
			return nil, nil, err
		}
		model = d.opts.Provider + "/" + id
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	if t.Agent.Thinking != "" {
		args = append(args, "--thinking", t.Agent.Thinking)
	}
	tools := toolList(t.Agent.Tools)
	if t.Delegate != nil {
		ext, err := writeExtension(t.Delegate, scratch)
		if err != nil {
			return nil, nil, err
		}
		// --tools allows extension tools by name too.
		args = append(args, "--extension", ext)
		tools = strings.TrimPrefix(tools+","+delegate.Tool, ",")
	}
	if tools == "" {
		args = append(args, "--no-tools")
	} else {
		args = append(args, "--tools", tools)
	}
	if strings.TrimSpace(t.Agent.Instructions) != "" {
		// pi reads the contents of an existing file named by the flag.
		sys := filepath.Join(scratch, "instructions.md")
		if err := os.WriteFile(sys, []byte(t.Agent.Instructions), 0o600); err != nil {
			return nil, nil, err
		}
		args = append(args, "--append-system-prompt", sys)
	}
	if t.Home != "" {
		args = append(args, "--session-dir", filepath.Join(t.Home, "pi-sessions"))
	} else {
		args = append(args, "--no-session")
	}
	if t.Session != "" {
		args = append(args, "--session", t.Session)
	}

	var drop, set []string
	if agentDir != "" {
		drop, set = []string{"PI_CODING_AGENT_DIR"}, []string{"PI_CODING_AGENT_DIR=" + agentDir}
	}
	set = append(set, d.opts.Env...)
	if t.Delegate != nil {
		drop = append(drop, delegate.EnvSocket, delegate.EnvToken)
		set = append(set, delegate.EnvSocket+"="+t.Delegate.Socket, delegate.EnvToken+"="+t.Delegate.Token)
	}
	// No update checks or install telemetry from inside a flow.
	set = append(set, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0")
	return args, agentcli.Environ(drop, set...), nil
}

// writeAgentDir writes a private pi configuration: one provider for the
// model server and bounded retries. No key is written, only its variable's
// name.
func (d *Driver) writeAgentDir(dir, modelID string, reasoning bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key := d.opts.APIKeyEnv
	if key == "" {
		key = "flow-no-key"
	}
	models := map[string]any{"providers": map[string]any{d.opts.Provider: map[string]any{
		"baseUrl": d.opts.BaseURL, "api": d.opts.API, "apiKey": key,
		"models": []any{map[string]any{"id": modelID, "reasoning": reasoning}},
	}}}
	retries := max(d.opts.MaxRetries, 0)
	settings := map[string]any{"retry": map[string]any{
		"enabled": retries > 0, "maxRetries": retries, "baseDelayMs": 500,
		"provider": map[string]any{"maxRetries": 0, "maxRetryDelayMs": 5000},
	}}
	for name, v := range map[string]any{"models.json": models, "settings.json": settings} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// readOnly is pi's read-only tool set, used when an agent names no tools.
const readOnly = "read,grep,find,ls"

// toolNames maps the tool names an agent may list (lower case: pi's own,
// and Claude Code's for the tools pi has) onto pi's. The loader refuses
// any other name (Spec's Tools), so an agent file written for Claude Code
// runs on pi with the same tools or says which one pi lacks.
var toolNames = map[string]string{
	"read": "read", "bash": "bash", "edit": "edit", "write": "write", "grep": "grep", "find": "find", "ls": "ls",
	"glob": "find", "multiedit": "edit",
}

// toolList maps an agent's tools onto pi's tool names: nil means the
// read-only set; Claude Code's names are accepted too.
func toolList(tools []string) string {
	if tools == nil {
		return readOnly
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range tools {
		n := strings.ToLower(strings.TrimSpace(name))
		if a, ok := toolNames[n]; ok {
			n = a
		}
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}
