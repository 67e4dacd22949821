package agentcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/steps/drivers"
	"github.com/flowrun/flow/steps/transcript"
)

// Command is one run of an agent CLI for one turn.
type Command struct {
	// Name is the CLI as diagnostics name it: "pi", "claude", "codex".
	Name string
	// Binary is the program; a name without a slash is looked up in PATH.
	Binary string
	Args   []string
	// Env is the whole environment; nil means the flow process's.
	Env []string
	// Dir is the working directory; "" means the flow process's.
	Dir string
	// Prompt is the turn text, given on stdin.
	Prompt string
	// RunID tags the process tree (package proc), so that a cancelled turn
	// or the end of the run finds every process it left.
	RunID string
	// Grace is the time between SIGTERM and SIGKILL on cancellation; zero
	// means proc.DefaultGrace.
	Grace time.Duration
	// Transcript gets every line of stdout as it arrives, before the
	// driver's parser does; nil keeps none.
	Transcript *transcript.Log
	// Lingering is called when the CLI closed its stdout but lives on and
	// is about to be ended (progress, typically); nil says nothing.
	Lingering func()
	// Started, when set, is called with the CLI's process id once it runs
	// (engine.Delegation.Bind: the turn's delegate calls must come from
	// its tree).
	Started func(pid int)
}

// Exit is how a run of an agent CLI ended.
type Exit struct {
	name string
	// Err is the error Wait returned: nil, an *exec.ExitError, or the
	// cancellation's.
	Err error
	// Stderr is the end of the standard error (transcript.Tail), kept for
	// the turn's result: a CLI that writes gigabytes there costs flow
	// StderrLimit bytes.
	Stderr string
	// Lingered says the CLI closed its stdout but was still running
	// proc.DefaultLinger later, and was ended: its stream had said all it
	// would, and the stream decides the turn.
	Lingered bool
}

// Run runs c: it starts the CLI, hands each line of its stdout, numbered
// from 1, to c.Transcript and then to each as the line arrives, and waits
// for the process tree to end. The error is for a CLI that never ran:
// context.Cause when ctx was already done, else one wrapping
// engine.ErrUnavailable. How a CLI that ran ended is the Exit's to say.
//
// The prompt goes in on stdin from a regular file: the CLIs read a
// non-TTY stdin to its end, so an open pipe would hold them forever; an
// argument could be taken for an option (or, by pi, an @file), and one may
// not exceed 128 KiB.
//
// Stdout is read by proc.RunOutput: a CLI that closes it and lingers is
// ended after proc.DefaultLinger, with progress saying so, and a stray
// descendant that keeps it open past the grace does not hold the turn.
func Run(ctx context.Context, c Command, each func(n int, line []byte)) (Exit, error) {
	stdin, err := promptFile(c.Prompt)
	if err != nil {
		return Exit{}, fmt.Errorf("writing the turn text for %s: %w", c.Name, err)
	}
	defer os.Remove(stdin.Name())
	defer stdin.Close()

	var stderr transcript.Tail
	p := proc.Command(ctx, c.RunID, c.Binary, c.Args...)
	p.Grace = c.Grace
	p.Started = c.Started
	p.Cmd.Dir = c.Dir
	p.Cmd.Env = c.Env
	p.Cmd.Stdin = stdin
	p.Cmd.Stderr = &stderr
	lines := NewLineWriter(func(n int, line []byte) {
		c.Transcript.Raw(line)
		each(n, line)
	})
	end, err := p.RunOutput(lines, 0, c.Lingering)
	if err != nil {
		if ctx.Err() != nil {
			return Exit{}, context.Cause(ctx)
		}
		return Exit{}, fmt.Errorf("starting %s: %w", c.Binary, drivers.Unavailable(err))
	}
	lines.Flush()
	return Exit{name: c.Name, Err: end.Err, Stderr: stderr.String(), Lingered: end.Lingered}, nil
}

// promptFile writes text to a new temporary file and returns it open for
// reading from its start. The caller closes and removes it.
func promptFile(text string) (*os.File, error) {
	f, err := os.CreateTemp("", "flow-prompt-*")
	if err != nil {
		return nil, err
	}
	if _, err = io.WriteString(f, text); err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// Problem describes an unclean exit for a diagnostic — the status and the
// last line of stderr, where CLIs put their reason — or returns "" for a
// clean one.
func (e Exit) Problem() string {
	if e.Lingered {
		return "" // the signal was flow's, after the CLI had said all it would
	}
	status, ok := proc.ExitStatus(e.Err)
	switch {
	case !ok:
		return fmt.Sprintf("waiting for %s: %v", e.name, e.Err)
	case status == 0:
		return ""
	}
	return fmt.Sprintf("%s exited with status %d%s", e.name, status, lastLine(e.Stderr))
}

// Settle applies how the run ended to res, whose status the stream has
// decided: a cancelled turn is Aborted, and Settle returns the cause for
// Turn to return with it; an unclean exit fails the turn, whatever the
// stream said.
func (e Exit) Settle(ctx context.Context, res *engine.TurnResult) error {
	if ctx.Err() != nil {
		res.Status = engine.Aborted
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("%s was stopped: %v", e.name, context.Cause(ctx)))
		return context.Cause(ctx)
	}
	if p := e.Problem(); p != "" {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, p)
	}
	if n := e.Lingering(); n != "" {
		res.Diagnostics = append(res.Diagnostics, n)
	}
	return nil
}

// Lingering is the diagnostic of a CLI that was ended because it lived on
// after closing its stdout, or "".
func (e Exit) Lingering() string {
	if !e.Lingered {
		return ""
	}
	return fmt.Sprintf("answer received, process did not exit: %s closed its output but was still running %v later; flow ended it", e.name, proc.DefaultLinger)
}

// lastLine returns ": <last non-blank line of stderr>", cut to 200 bytes,
// or "".
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
