package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/internal/sandbox"
	"github.com/flowrun/flow/steps/drivers"
)

// ReportBytes is the most output a run node's report keeps: the tail.
const ReportBytes = 8000

// LogName is the file in the visit's home that receives the whole output.
const LogName = "output.log"

// Commander runs the commands of `run:` nodes. Its zero value is not usable;
// call New.
type Commander struct {
	grace time.Duration
	paths *sync.Map // program name → resolved path, shared by copies
}

var _ engine.Commander = (*Commander)(nil)

// New returns a Commander that gives a cancelled command proc.DefaultGrace
// between SIGTERM and SIGKILL.
func New() *Commander { return &Commander{grace: proc.DefaultGrace, paths: &sync.Map{}} }

// resolve finds a program on PATH once per name and remembers it: a map of
// a thousand commands would otherwise search PATH a thousand times. Names
// with a slash are used as they are.
func (c *Commander) resolve(name string) string {
	if strings.Contains(name, "/") || c.paths == nil {
		return name
	}
	if p, ok := c.paths.Load(name); ok {
		return p.(string)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return name // let the start fail and say so
	}
	c.paths.Store(name, p)
	return p
}

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
	// One pipe for both streams keeps their order; the child writes straight
	// into it (no copying goroutine in os/exec), and we read it here.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating output pipe: %w", err)
	}
	defer pr.Close()
	out := &capture{home: cmd.Home, start: time.Now()}
	defer out.close()

	cmd.Progress(engine.Progress{Activity: activity(cmd)})
	env := environ(cmd)
	if cmd.Sandbox {
		sb, err := sandbox.Confine(cmd.Dir, argv)
		if err != nil {
			return nil, fmt.Errorf("running %s: %w: %w", argv[0], engine.ErrUnavailable, err)
		}
		defer sb.Close()
		// The node's own variables and the run's pass; the rest of flow's
		// environment only as the sandbox allows (no keys).
		argv, env = sb.Argv, sandbox.Env(os.Environ(), sb.Tmp, append(cmd.Env, "FLOW_RUN="+cmd.RunID, "FLOW_VISIT="+cmd.Visit)...)
	}
	p := proc.Command(ctx, cmd.RunID, c.resolve(argv[0]), argv[1:]...)
	p.Cmd.Args[0] = argv[0] // the program sees the name it was given
	p.Grace = c.grace
	p.Cmd.Dir = cmd.Dir
	p.Cmd.Env = env
	p.Cmd.Stdout = pw
	p.Cmd.Stderr = pw
	err = p.Start()
	_ = pw.Close() // the child has its copy; ours would keep the pipe open forever
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("starting %s: %w", argv[0], drivers.Unavailable(err))
	}
	copier := proc.StartCopy(pr, out)
	werr := p.Wait()
	// The command has exited. A descendant it left in the background may
	// keep the pipe open: wait for it only a moment, then stop reading —
	// after taking all the command wrote, however late the copying
	// goroutine runs on a busy machine.
	copier.Finish(time.Now().Add(drainAfterExit))
	if werr != nil && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	status, ok := proc.ExitStatus(werr)
	if !ok {
		return nil, fmt.Errorf("waiting for %s: %w", argv[0], werr)
	}
	report, err := out.tail(ReportBytes)
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
