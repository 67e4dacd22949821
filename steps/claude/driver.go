package claude

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/proc"
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

// Turn runs one Claude Code turn. See the package documentation.
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if t.Agent == nil {
		return nil, errors.New("running claude: the turn has no agent")
	}
	scratch, err := os.MkdirTemp("", "flow-claude-")
	if err != nil {
		return nil, fmt.Errorf("preparing claude: %w", err)
	}
	defer os.RemoveAll(scratch)
	args, env, err := d.setup(t, scratch)
	if err != nil {
		return nil, fmt.Errorf("preparing claude: %w", err)
	}
	// The prompt goes in on stdin from a regular file: it ends, unlike an
	// open pipe, and one argument may not exceed 128 KiB.
	stdin, err := os.Open(filepath.Join(scratch, "prompt.md"))
	if err != nil {
		return nil, fmt.Errorf("preparing claude: %w", err)
	}
	defer stdin.Close()

	t.Progress(engine.Progress{Activity: "starting claude"})
	var stderr bytes.Buffer
	p := proc.Command(ctx, t.RunID, d.opts.Binary, args...)
	p.Grace = d.opts.Grace
	p.Cmd.Dir = t.WorkDir
	p.Cmd.Env = env
	p.Cmd.Stdin = stdin
	p.Cmd.Stderr = &stderr
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting claude: %w", err)
	}
	start := time.Now()
	if err := p.Start(); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("starting %s: %w: %w", d.opts.Binary, engine.ErrUnavailable, err)
	}
	tr := openTranscript(t)
	ps := newParser(t.Progress)
	readLines(stdout, func(line []byte) {
		tr.write(line)
		ps.feed(line)
	})
	werr := p.Wait()
	wall := time.Since(start).Milliseconds()

	o := ps.outcome()
	res := &engine.TurnResult{Status: o.status, Output: o.output, Usage: o.usage, Diagnostics: o.diags,
		Stderr: stderr.String(), Session: ps.session}
	res.Usage.WallMS = wall
	if t.Session != "" && ps.session != "" && ps.session != t.Session {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("claude started session %s instead of resuming %s", ps.session, t.Session))
	}
	status, exited := proc.ExitStatus(werr)
	var rerr error
	switch {
	case ctx.Err() != nil:
		res.Status = engine.Aborted
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("claude was stopped: %v", context.Cause(ctx)))
		rerr = context.Cause(ctx)
	case !exited:
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("waiting for claude: %v", werr))
	case status != 0 && res.Status == engine.Completed:
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("claude exited with status %d%s", status, lastLine(res.Stderr)))
	case status != 0:
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("claude exited with status %d%s", status, lastLine(res.Stderr)))
	}
	if err := tr.Close(); err != nil {
		res.Diagnostics = append(res.Diagnostics, err.Error())
	}
	if tr.path != "" {
		res.Transcript = tr.path
		if err := writeHTML(tr.path, t.Agent.Name); err != nil {
			res.Diagnostics = append(res.Diagnostics, err.Error())
		}
	}
	return res, rerr
}

// setup writes the turn's files into scratch and returns Claude Code's
// arguments and environment.
func (d *Driver) setup(t *engine.Turn, scratch string) (args, env []string, err error) {
	if err := os.WriteFile(filepath.Join(scratch, "prompt.md"), []byte(t.Prompt), 0o600); err != nil {
		return nil, nil, err
	}
	tools := toolList(t.Agent.Tools)
	args = []string{"-p", "--output-format", "stream-json", "--verbose",
		// Only the agent's tools exist, and they run without asking;
		// anything else is denied rather than waiting for a person.
		"--permission-mode", "dontAsk", "--tools", strings.Join(tools, ",")}
	if len(tools) > 0 {
		args = append(args, "--allowedTools", strings.Join(tools, ","))
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

	drop := []string{"CLAUDE_CODE_MAX_RETRIES="}
	var extra []string
	if d.opts.BaseURL != "" {
		drop = append(drop, "ANTHROPIC_BASE_URL=", "CLAUDE_CONFIG_DIR=", "ANTHROPIC_AUTH_TOKEN=")
		extra = append(extra, "ANTHROPIC_BASE_URL="+d.opts.BaseURL)
		if t.Home != "" {
			dir := filepath.Join(t.Home, "claude-config")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, nil, err
			}
			extra = append(extra, "CLAUDE_CONFIG_DIR="+dir)
		}
	}
	if d.opts.APIKeyEnv != "" {
		drop = append(drop, "ANTHROPIC_API_KEY=")
		if key, ok := lookup(d.opts.Env, d.opts.APIKeyEnv); ok {
			extra = append(extra, "ANTHROPIC_API_KEY="+key)
		}
	}
	for _, kv := range os.Environ() {
		if !hasAnyPrefix(kv, drop) {
			env = append(env, kv)
		}
	}
	env = append(env, d.opts.Env...)
	env = append(env, extra...)
	env = append(env, "CLAUDE_CODE_MAX_RETRIES="+strconv.Itoa(max(d.opts.MaxRetries, 0)),
		// No telemetry, update checks or other traffic from inside a flow.
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return args, env, nil
}

// lookup finds name in env, then in the flow process's environment.
func lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return os.LookupEnv(name)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

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

// readLines calls fn with every line of r, however long, until EOF or an
// error.
func readLines(r io.Reader, fn func([]byte)) {
	br := bufio.NewReaderSize(r, 256<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			fn(line)
		}
		if err != nil {
			return
		}
	}
}

// lastLine returns ": <last non-blank line of stderr>" for a diagnostic.
func lastLine(stderr string) string {
	s := strings.TrimRight(stderr, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	const most = 200
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "…"
	}
	return ": " + s
}
