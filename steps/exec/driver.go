package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/flowrun/flow/steps/delegate"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/internal/sandbox"
	"github.com/flowrun/flow/steps/drivers"
	"github.com/flowrun/flow/steps/transcript"
)

// Options configure the exec driver. The zero value is ready to use.
type Options struct {
	// Grace is the time a cancelled program gets between SIGTERM and
	// SIGKILL; zero means proc.DefaultGrace.
	Grace time.Duration
	// Linger is how long a program that has closed its stdout may live on
	// before it is ended; zero means proc.DefaultLinger.
	Linger time.Duration
}

// Driver runs exec agents. It holds only settings: it is immutable and safe
// for concurrent use. Its zero value is not usable; call New.
type Driver struct {
	opts Options
}

var _ engine.Driver = (*Driver)(nil)

// New returns a Driver with the given options.
func New(opts Options) *Driver {
	if opts.Grace == 0 {
		opts.Grace = proc.DefaultGrace
	}
	if opts.Linger == 0 {
		opts.Linger = proc.DefaultLinger
	}
	return &Driver{opts: opts}
}

// Turn runs the agent's command for one turn. See the package documentation
// for the outcome, usage and transcript.
func (d *Driver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if t.Agent == nil || len(t.Agent.Command) == 0 {
		return nil, fmt.Errorf("starting exec agent: %w: the agent has no command", engine.ErrUnavailable)
	}
	argv := resolve(t.Agent.Command, t.Agent.Source)
	name := filepath.Base(argv[0])
	t.Progress(engine.Progress{Activity: "running " + name})

	// The answer is held up to engine.AnswerLimit; a longer one is stored
	// once, in its answer file. Stderr's end is kept (transcript.Tail).
	answer := transcript.NewAnswer(t.Home, t.Agent.Name, t.Secrets)
	defer answer.Close()
	var stderr transcript.Tail
	var stdout io.Writer = answer
	env := environ(t)
	if t.Agent.Sandbox == "on" {
		sb, err := sandbox.Confine(cmp.Or(t.WorkDir, "."), argv)
		if err != nil {
			return nil, fmt.Errorf("starting %s: %w: %w", argv[0], engine.ErrUnavailable, err)
		}
		defer sb.Close()
		argv, env = sb.Argv, sandbox.Env(os.Environ(), sb.Tmp, flowOnly(env)...)
	}
	p := proc.Command(ctx, t.RunID, argv[0], argv[1:]...)
	p.Grace = d.opts.Grace
	if t.Delegate != nil {
		p.Started = t.Delegate.Bind // its calls must come from this process's tree
	}
	p.Cmd.Dir = t.WorkDir
	p.Cmd.Env = env
	p.Cmd.Stdin = strings.NewReader(t.Prompt)
	reps := newReports(t.Progress)
	p.Cmd.Stderr = io.MultiWriter(&stderr, reps)
	// The live log lets `flow tail` show what the program writes while the
	// turn runs; the transcript line is only written when it ends.
	live := openLive(t)
	if live != nil {
		defer live.close()
		stdout = io.MultiWriter(answer, live.stdout(answer))
		p.Cmd.Stderr = io.MultiWriter(&stderr, reps, live.stderrLog())
	}

	start := time.Now()
	end, err := p.RunOutput(stdout, d.opts.Linger, func() {
		t.Progress(engine.Progress{Activity: fmt.Sprintf("answer received, %s did not exit; ending it", name)})
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("starting %s: %w", argv[0], drivers.Unavailable(err))
	}
	werr := end.Err
	wall := time.Since(start).Milliseconds()

	res := &engine.TurnResult{Stderr: stderr.String()}
	var diags []string
	if err := answer.Result(res, true); err != nil {
		diags = append(diags, "storing the answer: "+err.Error())
	}
	status, exited := proc.ExitStatus(werr)
	if !exited {
		status = -1
	}
	// What the program reported is final unless flow stopped it or a
	// signal killed it before it was done.
	stopped := werr != nil && ctx.Err() != nil || !end.Lingered && exited && status > 128 && !isExit(werr)
	res.Usage, res.Diagnostics = reps.usage(!stopped)
	res.Usage.WallMS = wall
	var rerr error
	blank := answer.Blank()
	switch {
	case werr != nil && ctx.Err() != nil:
		res.Status = engine.Aborted
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("%s was stopped: %v", name, context.Cause(ctx)))
		rerr = context.Cause(ctx)
	case end.Lingered && !blank:
		// The answer was complete when stdout closed.
		res.Status = engine.Completed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("answer received, process did not exit: %s closed its output but was still running %v later; flow ended it", name, d.opts.Linger))
	case end.Lingered:
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("no answer: %s closed its output without one and was still running %v later; flow ended it", name, d.opts.Linger))
	case !exited:
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("waiting for %s: %v", name, werr))
	case status > 128 && !isExit(werr):
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("%s was killed by signal %d%s", name, status-128, lastLine(res.Stderr)))
	case status != 0:
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("%s exited with status %d%s", name, status, lastLine(res.Stderr)))
	case blank:
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("no answer: %s exited 0 with nothing on stdout%s", name, lastLine(res.Stderr)))
	default:
		res.Status = engine.Completed
	}
	if end.HeldOpen || errors.Is(werr, osexec.ErrWaitDelay) {
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("a background process of %s held its output open; it was closed after %v", name, d.opts.Grace))
	}
	if len(diags) > 0 {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, diags...)
	}
	if end.Lingered {
		status = 0 // what the program said by closing its output; the signal was flow's
	}

	path, terr := appendTranscript(t, res, status, wall)
	if terr != nil {
		res.Diagnostics = append(res.Diagnostics, terr.Error())
	}
	res.Transcript = path
	return res, rerr
}

// isExit reports whether err is a normal exit (not a death by signal).
func isExit(err error) bool {
	var exit *osexec.ExitError
	return errors.As(err, &exit) && exit.Exited()
}

// resolve makes an argv[0] that starts with ./ or ../ relative to the
// directory of the agent's file, when there is one.
func resolve(command []string, source string) []string {
	argv := append([]string(nil), command...)
	if source == "" || !(strings.HasPrefix(argv[0], "./") || strings.HasPrefix(argv[0], "../")) {
		return argv
	}
	dir := filepath.Dir(source)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	argv[0] = filepath.Join(dir, argv[0])
	return argv
}

// flowVars are set by the driver; inherited values are dropped so that a
// flow running inside another flow's agent does not pass the outer ones on.
var flowVars = []string{"FLOW_MODEL=", "FLOW_VISIT=", "FLOW_RUN=", "FLOW_OUTPUT_SCHEMA=",
	delegate.EnvSocket + "=", delegate.EnvToken + "="}

func environ(t *engine.Turn) []string {
	parent := os.Environ()
	env := make([]string, 0, len(parent)+len(flowVars))
	for _, kv := range parent {
		if !hasAnyPrefix(kv, flowVars) {
			env = append(env, kv)
		}
	}
	env = append(env, "FLOW_MODEL="+t.Model, "FLOW_VISIT="+t.Visit, "FLOW_RUN="+t.RunID)
	if t.OutputSchema != nil {
		env = append(env, "FLOW_OUTPUT_SCHEMA="+string(t.OutputSchema))
	}
	// A turn that may delegate hands its calls to `flow delegate`
	// (docs/delegation.md).
	if d := t.Delegate; d != nil {
		env = append(env, delegate.EnvSocket+"="+d.Socket, delegate.EnvToken+"="+d.Token)
	}
	return env
}

// flowOnly is the turn's own variables of env (FLOW_MODEL, FLOW_VISIT,
// FLOW_RUN, FLOW_OUTPUT_SCHEMA, the delegation's): what a sandboxed
// program gets besides the sandbox's allowlist.
func flowOnly(env []string) []string {
	var out []string
	for _, kv := range env {
		if hasAnyPrefix(kv, []string{"FLOW_MODEL=", "FLOW_VISIT=", "FLOW_RUN=", "FLOW_OUTPUT_SCHEMA=", delegate.EnvSocket + "=", delegate.EnvToken + "="}) {
			out = append(out, kv)
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// lastLine returns ": <last non-blank line of stderr>" for a diagnostic, or
// "" when stderr is blank.
func lastLine(stderr string) string {
	line := lastNonBlank(stderr)
	if line == "" {
		return ""
	}
	const most = 200
	if len(line) > most {
		line = strings.ToValidUTF8(line[:most], "") + "…"
	}
	return ": " + line
}

func lastNonBlank(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}
