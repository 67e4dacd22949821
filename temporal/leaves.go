package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
)

// leaves is the engine.LeafRunner of a walk in a workflow: every turn and
// command is an activity on the run's task queue, and a memory scope's
// later turns go to the own queue of the worker that holds its session.
type leaves struct {
	queue  string // the shared task queue
	timing Timing
	cont   *continuer
}

// The walker cannot watch a turn on a worker live: the workflow's host
// is blind (engine.Parts.Blind), each turn bound by what it reserved
// (docs/temporal.md), which TokensLeft carries to the worker.
var _ engine.LeafRunner = leaves{}

// options are a leaf's activity options: its own timeout is applied on
// the worker (a timeout is a value), so the activity gets it plus grace;
// a worker that stops heartbeating is taken for dead and the activity
// retried, on another worker for the shared queue. A turn for a held
// session must be taken by that worker within SessionWait.
func (l leaves) options(queue string, timeout time.Duration, held bool) workflow.ActivityOptions {
	o := workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: timeout + l.timing.Grace,
		HeartbeatTimeout:    l.timing.Heartbeat,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: 10 * time.Second, MaximumAttempts: int32(l.timing.Attempts)},
	}
	if held {
		o.ScheduleToStartTimeout = l.timing.SessionWait
	}
	return o
}

func (l leaves) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	w := workflowOf(ctx)
	in := &TurnInput{RunID: t.RunID, Visit: t.Visit, Agent: t.Agent, Model: t.Model, Prompt: t.Prompt, OutputSchema: t.OutputSchema,
		Home: t.Home, WorkDir: t.WorkDir, Timeout: t.Timeout, TokensLeft: t.TokensLeft}
	queue, held := l.queue, ""
	if t.Session != "" {
		held, in.Session = splitSession(t.Session)
		if held != "" {
			queue = held
		}
	}
	var out TurnOutput
	if n := turnSize(in); n > maxLeafInput {
		return nil, tooLarge("turn's prompt", n)
	}
	if err := l.cont.admit(w); err != nil {
		return nil, settle(ctx, w)
	}
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(w, l.options(queue, t.Timeout, held != "")), TurnActivity, in)
	err := f.Get(w, &out)
	l.cont.done()
	if err != nil {
		return nil, l.failed(ctx, w, err, held)
	}
	res := out.Result
	if res != nil {
		res.Worker = out.Worker
		if res.Session != "" {
			res.Session = joinSession(out.Worker, res.Session)
		}
	}
	return res, out.Ended.err()
}

func (l leaves) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	w := workflowOf(ctx)
	in := &CommandInput{RunID: c.RunID, Visit: c.Visit, Argv: c.Argv, Script: c.Script, Dir: c.Dir, Home: c.Home, Env: c.Env, Timeout: c.Timeout}
	var out CommandOutput
	if n := commandSize(in); n > maxLeafInput {
		return nil, tooLarge("command with its environment", n)
	}
	if err := l.cont.admit(w); err != nil {
		return nil, settle(ctx, w)
	}
	f := workflow.ExecuteActivity(workflow.WithActivityOptions(w, l.options(l.queue, c.Timeout, false)), CommandActivity, in)
	err := f.Get(w, &out)
	l.cont.done()
	if err != nil {
		return nil, l.failed(ctx, w, err, "")
	}
	if out.Result != nil {
		out.Result.Worker = out.Worker
	}
	return out.Result, out.Ended.err()
}

// failed turns an activity's failure into the walker's terms: a
// cancellation is the walk's own (its cause), a held session whose worker
// did not take the turn is `unavailable` naming the worker, and anything
// else is infrastructure that outlasted its retries: `unavailable` too.
func (l leaves) failed(ctx context.Context, w workflow.Context, err error, held string) error {
	if w.Err() != nil || ctx.Err() != nil {
		return settle(ctx, w)
	}
	var te *temporal.TimeoutError
	if held != "" && errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		return fmt.Errorf("%w: worker %s holds this memory scope's session and did not take the turn within %s (it stopped or died); "+
			"a session cannot move to another worker, so the scope cannot go on", engine.ErrUnavailable, held, l.timing.SessionWait)
	}
	return fmt.Errorf("%w: no worker ran the visit to its end: %v", engine.ErrUnavailable, err)
}
