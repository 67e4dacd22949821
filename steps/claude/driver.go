package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/delegate"
	"github.com/flowrun/flow/steps/meter"
)

// Options configure the claude driver. The zero value runs `claude` from
// PATH with the user's own configuration and login.
type Options struct {
	// Binary is the Claude Code program; "" means "claude", looked up in PATH.
	Binary string
	// BaseURL, when set, is an Anthropic Messages server (ANTHROPIC_BASE_URL,
	// without /v1). Claude Code then runs with a private configuration
	// directory in each memory scope's home (CLAUDE_CONFIG_DIR), so the
	// user's ~/.claude is never read or written, and sessions stay with the
	// run for --resume.
	BaseURL string
	// APIKeyEnv names the environment variable (in Env, else the flow
	// process's) whose value Claude Code gets as ANTHROPIC_API_KEY. "" leaves
	// ANTHROPIC_API_KEY as it is.
	APIKeyEnv string
	// MaxRetries bounds Claude Code's own retries of a failed request
	// (CLAUDE_CODE_MAX_RETRIES; its default is 10, minutes against a failing
	// server). flow's `retry:` is the retry policy, so zero means none.
	MaxRetries int
	// Env is added to Claude Code's environment. It is never written anywhere.
	Env []string
	// Grace is the time between SIGTERM and SIGKILL on cancellation; zero
	// means proc.DefaultGrace.
	Grace time.Duration
}

// Driver runs Claude Code agents. It holds only settings: it is immutable
// and safe for concurrent use. Its zero value is not usable; call New.
type Driver struct {
	opts Options
}

var _ engine.Driver = (*Driver)(nil)

// New returns a Driver with the given options.
func New(opts Options) *Driver {
	if opts.Binary == "" {
		opts.Binary = "claude"
	}
	return &Driver{opts: opts}
}

// Turn runs one Claude Code turn, paced by its provider key's limiter
// (agentcli.Paced). See the package documentation.
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if t.Agent == nil {
		return nil, errors.New("running claude: the turn has no agent")
	}
	var key string
	if d.opts.APIKeyEnv != "" {
		key, _ = agentcli.Lookup(d.opts.Env, d.opts.APIKeyEnv)
	}
	pk := ratelimit.Key{Driver: "claude", BaseURL: d.opts.BaseURL, Key: ratelimit.Fingerprint(key), Model: t.Model}
	return agentcli.Paced(ctx, t, pk, func(ctx context.Context) (*engine.TurnResult, error) { return d.turn(ctx, t) })
}

func (d *Driver) turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	scratch, err := os.MkdirTemp("", "flow-claude-")
	if err != nil {
		return nil, fmt.Errorf("preparing claude: %w", err)
	}
	defer os.RemoveAll(scratch)
	p := newParser(t.Progress, agentcli.NewCalls(t.Tools, "claude"))
	// With a server, Claude Code talks to it through the turn's meter
	// (package meter): each message's usage counts as the server sends
	// it, and a request the budget cannot afford is never sent.
	base := d.opts.BaseURL
	var mt *meter.Meter
	if base != "" {
		var affords func(int64) bool
		if t.Affords != nil {
			affords = func(next int64) bool { return t.Affords(p.tokens(), next) }
		}
		if mt, err = meter.Start(ctx, base, p.metered, affords); err != nil {
			return nil, fmt.Errorf("preparing claude: %w", err)
		}
		defer mt.Close()
		base = mt.URL()
	}
	args, env, err := d.setup(t, scratch, base)
	if err != nil {
		return nil, fmt.Errorf("preparing claude: %w", err)
	}
	var key string // redacted from the transcript
	if d.opts.APIKeyEnv != "" {
		key, _ = agentcli.Lookup(d.opts.Env, d.opts.APIKeyEnv)
	}
	res, rerr := agentcli.Turn(ctx, t, agentcli.Command{
		Name: "claude", Binary: d.opts.Binary, Args: args, Env: env, Dir: t.WorkDir, Prompt: t.Prompt,
		RunID: t.RunID, Grace: d.opts.Grace,
	}, p, key)
	if res != nil {
		res.Diagnostics = append(res.Diagnostics, mt.Problems()...)
		if why := mt.Refusal(); why != "" && ctx.Err() == nil {
			// The meter refused a request the budget could not afford:
			// the turn fails `budget`, with what it spent until then.
			res.Status, res.Diagnostics = engine.Failed, append(res.Diagnostics, why)
			rerr = fmt.Errorf("%w: %s", engine.ErrBudget, why)
		}
	}
	return res, rerr
}

// setup writes the turn's files into scratch and returns Claude Code's
// arguments and environment; base is the server's base URL Claude Code
// is given (its meter's), "" for Claude Code's own.
func (d *Driver) setup(t *engine.Turn, scratch, base string) (args, env []string, err error) {
	tools := toolList(t.Agent.Tools)
	// --include-partial-messages passes the API's stream on, whose
	// message_delta events carry each message's output tokens as it ends.
	args = []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
		// Only the agent's tools exist, and they run without asking;
		// anything else is denied rather than waiting for a person.
		"--permission-mode", "dontAsk", "--tools", strings.Join(tools, ",")}
	allowed := tools
	if t.Delegate != nil {
		cfg, err := mcpConfig(t.Delegate, scratch)
		if err != nil {
			return nil, nil, err
		}
		// Only flow's server, whatever the user's or the project's
		// configuration holds, and its tool runs without asking.
		args = append(args, "--mcp-config", cfg, "--strict-mcp-config")
		allowed = append(allowed[:len(allowed):len(allowed)], delegateTool)
	}
	if len(allowed) > 0 {
		args = append(args, "--allowedTools", strings.Join(allowed, ","))
	}
	if t.Model != "" {
		args = append(args, "--model", t.Model)
	}
	if effort := effort(t.Agent.Thinking); effort != "" {
		args = append(args, "--effort", effort)
	}
	if strings.TrimSpace(t.Agent.Instructions) != "" {
		sys := filepath.Join(scratch, "instructions.md")
		if err := os.WriteFile(sys, []byte(t.Agent.Instructions), 0o600); err != nil {
			return nil, nil, err
		}
		args = append(args, "--append-system-prompt-file", sys)
	}
	if t.OutputSchema != nil {
		args = append(args, "--json-schema", string(t.OutputSchema))
	}
	if t.Session != "" {
		args = append(args, "--resume", t.Session)
	}

	drop := []string{"CLAUDE_CODE_MAX_RETRIES"}
	var extra []string
	if t.Delegate != nil {
		// In -p mode Claude Code does not wait for its MCP servers by
		// default: on a busy machine its first request went out before
		// flow's delegate server had connected, without the tool, and the
		// agent answered without delegating. It waits for flow's server
		// (a local process) as long as a slow machine needs.
		drop = append(drop, "MCP_CONNECTION_NONBLOCKING", "MCP_CONNECT_TIMEOUT_MS")
		extra = append(extra, "MCP_CONNECTION_NONBLOCKING=0", "MCP_CONNECT_TIMEOUT_MS="+strconv.Itoa(mcpConnectMS))
	}
	if base != "" {
		drop = append(drop, "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "ANTHROPIC_AUTH_TOKEN")
		extra = append(extra, "ANTHROPIC_BASE_URL="+base)
		if t.Home != "" {
			dir := filepath.Join(t.Home, "claude-config")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, nil, err
			}
			extra = append(extra, "CLAUDE_CONFIG_DIR="+dir)
		}
	}
	if d.opts.APIKeyEnv != "" {
		drop = append(drop, "ANTHROPIC_API_KEY")
		if key, ok := agentcli.Lookup(d.opts.Env, d.opts.APIKeyEnv); ok {
			extra = append(extra, "ANTHROPIC_API_KEY="+key)
		}
	}
	set := append(append(append([]string(nil), d.opts.Env...), extra...),
		"CLAUDE_CODE_MAX_RETRIES="+strconv.Itoa(max(d.opts.MaxRetries, 0)),
		// No telemetry, update checks or other traffic from inside a flow.
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return args, agentcli.Environ(drop, set...), nil
}

// mcpConnectMS is how long Claude Code waits for flow's delegate server
// to connect before its first request: a flow process starting on a busy
// machine, well within a minute.
const mcpConnectMS = 60_000

// readOnly is the read-only tool set, used when an agent names no tools.
var readOnly = []string{"Read", "Grep", "Glob"}

// names maps pi's and lower-case tool names onto Claude Code's.
var names = map[string]string{
	"read": "Read", "write": "Write", "edit": "Edit", "multiedit": "MultiEdit", "bash": "Bash",
	"grep": "Grep", "find": "Glob", "glob": "Glob", "ls": "Glob", "webfetch": "WebFetch",
	"websearch": "WebSearch", "notebookedit": "NotebookEdit", "task": "Task",
}

// toolList maps an agent's tools onto Claude Code's tool names: nil means
// the read-only set, an empty list no tools.
func toolList(tools []string) []string {
	if tools == nil {
		return readOnly
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range tools {
		n := strings.TrimSpace(name)
		if c, ok := names[strings.ToLower(n)]; ok {
			n = c
		}
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// effort maps an agent's thinking level onto Claude Code's --effort.
func effort(thinking string) string {
	switch strings.ToLower(thinking) {
	case "", "off", "none":
		return ""
	case "minimal", "low":
		return "low"
	case "medium":
		return "medium"
	case "high":
		return "high"
	default:
		return strings.ToLower(thinking) // xhigh, max: as Claude Code knows them
	}
}

// delegateTool is the name Claude Code gives the delegate tool of flow's
// MCP server: mcp__<server>__<tool>.
const delegateTool = "mcp__" + delegate.MCPName + "__" + delegate.Tool

// mcpConfig writes the --mcp-config file that starts flow's delegate
// server (package mcpserver) into dir, and returns its path. The file
// holds the turn's token, so it lives in the turn's scratch directory,
// removed when the turn ends, not in the home.
func mcpConfig(d *engine.Delegation, dir string) (string, error) {
	l, err := delegate.MCPLaunch(d)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		delegate.MCPName: map[string]any{"type": "stdio", "command": l.Command, "args": l.Args, "env": l.Env},
	}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "mcp.json")
	return path, os.WriteFile(path, b, 0o600)
}
