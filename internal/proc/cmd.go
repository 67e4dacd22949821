package proc

import (
	"context"
	"errors"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// DefaultGrace is how long a cancelled process tree has between SIGTERM and
// SIGKILL (docs/drivers.md).
const DefaultGrace = 5 * time.Second

// Cmd is a program started in its own process group, tagged in its
// environment, and ended with its whole tree when its context is done.
type Cmd struct {
	// Cmd is the underlying command. Set Dir, Env (nil means os.Environ()),
	// Stdin (nil means /dev/null), Stdout and Stderr on it, or take its pipes,
	// before Start. Do not call its Start, Run, Output or CombinedOutput: they
	// would bypass the process group, the tag and the cancellation.
	Cmd *exec.Cmd
	// Grace is the time between SIGTERM and SIGKILL on cancellation; zero
	// means DefaultGrace.
	Grace time.Duration
	// Started, when set, is called with the process's id (the leader of
	// its process group) once it runs, before Start returns.
	Started func(pid int)

	tag string
	// traceparent is TRACEPARENT for the program, "" to leave it as the
	// environment has it.
	traceparent string
	run         string // the run id, whose groups EndRun ends
	// stop cancels the command's own context (Stop); Wait releases it.
	stop context.CancelCauseFunc
	// cancelled holds the time of the cancellation in Unix nanoseconds, or 0.
	// It is written by os/exec's context watcher and read after Wait.
	cancelled atomic.Int64
	// termed are the tagged processes interrupt sent SIGTERM; Wait reads it
	// after os/exec's watcher, which called interrupt, has reported back.
	termed []int
}

// Command returns a Cmd that runs name with arg on behalf of the run runID.
// Like exec.CommandContext, a name without a slash is looked up in PATH, and
// the lookup error, if any, is returned by Start.
//
// When ctx holds a trace's span (a traced run, docs/tracing.md), the
// program gets it as TRACEPARENT, in W3C trace context form, so that a
// program that traces itself joins the run's trace.
func Command(ctx context.Context, runID, name string, arg ...string) *Cmd {
	parent := traceparent(ctx)
	ctx, stop := context.WithCancelCause(ctx)
	return &Cmd{Cmd: exec.CommandContext(ctx, name, arg...), tag: newTag(runID), run: runID, stop: stop, traceparent: parent}
}

// traceparent is the W3C traceparent of ctx's span, "" without one.
func traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// Stop ends the command's process tree as a cancellation of its context
// would (SIGTERM, SIGKILL after the grace), without cancelling anything
// else. Wait still has to be called.
func (c *Cmd) Stop(cause error) { c.stop(cause) }

// Tag returns the value of FLOW_PROC_TAG that this command and its
// descendants carry in their environment.
func (c *Cmd) Tag() string { return c.tag }

// Start starts the command in its own process group with its tag added to
// its environment. An error from Start means the program did not run; when
// the context was already done, the error is the context's.
func (c *Cmd) Start() error {
	cmd := c.Cmd
	cmd.Env = withTag(cmd.Env, c.tag)
	if c.traceparent != "" {
		// os/exec keeps the last of duplicate entries.
		cmd.Env = append(cmd.Env, "TRACEPARENT="+c.traceparent)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	// If the engine itself dies (kill -9), the child is told with SIGTERM;
	// whatever it leaves is ended by the resume (KillTagged on the run).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	cmd.Cancel = c.interrupt
	// WaitDelay bounds both the wait for a child that ignores SIGTERM (os/exec
	// then kills it) and the wait for pipes a stray descendant keeps open.
	cmd.WaitDelay = c.grace()
	if err := cmd.Start(); err != nil {
		return err
	}
	addGroup(c.run, cmd.Process.Pid)
	if c.Started != nil {
		c.Started(cmd.Process.Pid)
	}
	return nil
}

// Wait waits for the command to exit. After a cancellation it also waits,
// up to the grace period counted from the cancellation, for the rest of the
// process tree to go, then SIGKILLs whatever is left and gives it at most
// half a second more to leave: a cancelled Wait returns within grace + 0.5 s
// of the cancellation, with the tree gone.
// The error is os/exec's: nil, an *exec.ExitError, or the cancellation's.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	defer c.stop(nil) // the process is gone: release the context
	if at := c.cancelled.Load(); at != 0 {
		reap(c.Cmd.Process.Pid, exactTag(c.tag), time.Unix(0, at).Add(c.grace()), c.termed)
	}
	settleGroup(c.run, c.Cmd.Process.Pid)
	return err
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Cancelled reports whether the command was cancelled through its context
// while it ran. It is meaningful after Wait.
func (c *Cmd) Cancelled() bool { return c.cancelled.Load() != 0 }

func (c *Cmd) grace() time.Duration {
	if c.Grace > 0 {
		return c.Grace
	}
	return DefaultGrace
}

// interrupt is the command's Cancel: os/exec calls it once, from its context
// watcher, while the child is still unreaped, so its pid is also a valid
// process group id.
func (c *Cmd) interrupt() error {
	c.cancelled.CompareAndSwap(0, time.Now().UnixNano())
	_ = syscall.Kill(-c.Cmd.Process.Pid, syscall.SIGTERM)
	c.termed, _ = scan(exactTag(c.tag))
	signal(c.termed, syscall.SIGTERM)
	return nil
}

// ExitStatus returns the exit status of a command from the error its Wait
// returned: 0 for nil, the status of a normal exit, or 128+n for a death by
// signal n, as shells report it. ok is false when err says nothing about the
// exit (the command could not be waited for). exec.ErrWaitDelay counts as 0:
// os/exec returns it only for a successful exit whose output pipes a stray
// descendant kept open past the grace period.
func ExitStatus(err error) (status int, ok bool) {
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		return 0, true
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return 0, false
	}
	if ws, isWS := exit.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return exit.ExitCode(), true
}
