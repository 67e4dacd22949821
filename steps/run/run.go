package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/proc"
)

// ReportBytes is the most output a run node's report keeps: the tail.
const ReportBytes = 8000

// LogName is the file in the visit's home that receives the whole output.
const LogName = "output.log"

// Commander runs the commands of `run:` nodes. Its zero value is not usable;
// call New.
type Commander struct {
	grace time.Duration
}

var _ engine.Commander = (*Commander)(nil)

// New returns a Commander that gives a cancelled command proc.DefaultGrace
// between SIGTERM and SIGKILL.
func New() *Commander { return &Commander{grace: proc.DefaultGrace} }

// WithGrace returns a copy of c with another grace period between SIGTERM
// and SIGKILL on cancellation.
func (c *Commander) WithGrace(d time.Duration) *Commander {
	cc := *c
	cc.grace = d
	return &cc
}

// Run runs one `run:` visit and returns its output. The error is non-nil
// only when the command could not be started (wrapping
// engine.ErrUnavailable), when the context ended it (context.Cause), or when
// the output log could not be used.
func (c *Commander) Run(ctx context.Context, cmd *engine.Command) (*engine.CommandResult, error) {
	argv, err := argvOf(cmd)
	if err != nil {
		return nil, err
	}
	log, err := openLog(cmd.Home)
	if err != nil {
		return nil, err
	}
	defer log.Close()

	cmd.Progress(engine.Progress{Activity: activity(cmd)})
	p := proc.Command(ctx, cmd.RunID, argv[0], argv[1:]...)
	p.Grace = c.grace
	p.Cmd.Dir = cmd.Dir
	p.Cmd.Env = environ(cmd)
	p.Cmd.Stdout = log
	p.Cmd.Stderr = log
	if err := p.Start(); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("starting %s: %w: %w", argv[0], engine.ErrUnavailable, err)
	}
	werr := p.Wait()
	if werr != nil && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	status, ok := proc.ExitStatus(werr)
	if !ok {
		return nil, fmt.Errorf("waiting for %s: %w", argv[0], werr)
	}
	report, err := tail(log, ReportBytes)
	if err != nil {
		return nil, fmt.Errorf("reading output of %s: %w", argv[0], err)
	}
	return &engine.CommandResult{Passed: status == 0, Exit: status, Report: report}, nil
}

func argvOf(cmd *engine.Command) ([]string, error) {
	switch {
	case len(cmd.Argv) > 0 && cmd.Script != "":
		return nil, errors.New("running command: both argv and script are set")
	case len(cmd.Argv) > 0:
		return cmd.Argv, nil
	case cmd.Script != "":
		return []string{"bash", "-c", cmd.Script}, nil
	}
	return nil, errors.New("running command: neither argv nor script is set")
}

// openLog opens <home>/output.log, truncated, for both streams. O_APPEND
// keeps a child that seeks from overwriting what the other stream wrote.
// Without a home the log is an unnamed temporary file.
func openLog(home string) (*os.File, error) {
	if home == "" {
		f, err := os.CreateTemp("", "flow-run-*.log")
		if err != nil {
			return nil, fmt.Errorf("creating output log: %w", err)
		}
		_ = os.Remove(f.Name())
		return f, nil
	}
	f, err := os.OpenFile(filepath.Join(home, LogName), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening output log: %w", err)
	}
	return f, nil
}

// environ is the process environment, then the node's, then the run's
// variables; os/exec keeps the last of duplicates, so later ones win.
func environ(cmd *engine.Command) []string {
	env := os.Environ()
	env = append(env[:len(env):len(env)], cmd.Env...)
	return append(env, "FLOW_RUN="+cmd.RunID, "FLOW_VISIT="+cmd.Visit)
}

// activity names what the visit does in one short line.
func activity(cmd *engine.Command) string {
	if len(cmd.Argv) > 0 {
		return "running " + filepath.Base(cmd.Argv[0])
	}
	line, _, _ := strings.Cut(strings.TrimSpace(cmd.Script), "\n")
	const most = 60
	if len(line) > most {
		line = strings.ToValidUTF8(line[:most], "") + "…"
	}
	return "running " + line
}

// tail returns the last n bytes of f, without a broken UTF-8 sequence at the
// start when the cut fell inside one.
func tail(f *os.File, n int64) (string, error) {
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := st.Size()
	off := max(size-n, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if off > 0 {
		for i := 0; i < utf8.UTFMax-1 && len(buf) > 0 && !utf8.RuneStart(buf[0]); i++ {
			buf = buf[1:]
		}
	}
	return string(buf), nil
}
