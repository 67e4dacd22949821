package temporal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

// leaves is the engine.LeafRunner of a walk in a workflow: every turn and
// command is an activity on the run's task queue, and a memory scope's
// later turns go to the own queue of the worker that holds its session.
type leaves struct {
	queue  string // the shared task queue
	timing Timing
	ws     *workspace // the run's isolated scopes, nil when it has none
	// origin is the directory the snapshot's relative paths are relative
	// to (RunInput.Origin, else the run's working directory).
	origin string
	// keyEnvs name the variables the run's agents take their keys from
	// (sorted): every leaf's worker redacts their values.
	keyEnvs []string
	// ids names activities by visit (versions.visitIDs): how many of each
	// visit's activities were scheduled, for a retry's id. nil: the SDK's
	// sequence numbers (version 0).
	ids map[string]int
	// rec keeps the attempts sent and lost, by visit, for the visit's
	// end fact.
	rec  *recorder
	cont *continuer
}

// activityID is the id of the next activity of visit: the visit's path,
// then "~2", "~3" for the walker's retries of it.
func (l leaves) activityID(visit string) string {
	if l.ids == nil || len(visit) > 400 {
		return ""
	}
	l.ids[visit]++
	if n := l.ids[visit]; n > 1 {
		return fmt.Sprintf("%s~%d", visit, n)
	}
	return visit
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
func (l leaves) options(visit, queue string, timeout time.Duration, held bool) workflow.ActivityOptions {
	o := workflow.ActivityOptions{
		ActivityID:          l.activityID(visit),
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
	in := &TurnInput{RunID: t.RunID, Visit: t.Visit, Agent: l.placed(t.Agent), Model: t.Model, Prompt: t.Prompt, OutputSchema: t.OutputSchema,
		Home: t.Home, WorkDir: t.WorkDir, Timeout: t.Timeout, TokensLeft: t.TokensLeft, KeyEnvs: l.keyEnvs,
		Scope: l.ws.scopeAt(t.WorkDir)}
	if t.Delegate != nil {
		in.Delegate = &TurnDelegation{Agents: t.Delegate.Agents, Token: t.Delegate.Token}
	}
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
	if err := l.cont.admit(w, isChild(t.Visit)); err != nil {
		return nil, settle(ctx, w)
	}
	err := untilOpened(w, func() workflow.Future {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(w, l.options(t.Visit, queue, t.Timeout, held != "")), TurnActivity, in)
	}, &out)
	l.cont.done()
	if err != nil {
		l.lost(t.Visit, lastSent(err))
		return nil, l.failed(ctx, w, err, held)
	}
	res := out.Result
	l.lost(t.Visit, out.Sent)
	if res != nil {
		// What the lost attempts spent, as far as their heartbeats said,
		// is the visit's too: the ledger settles it with the rest.
		var spent int64
		for _, s := range out.Sent {
			if s.Tokens != nil {
				spent += *s.Tokens
			}
		}
		if len(out.Sent) > 0 {
			res.Usage.Add(record.Usage{Input: &spent, Partial: true})
		}
		res.Worker = out.Worker
		if res.Session != "" {
			res.Session = joinSession(out.Worker, res.Session)
		}
	}
	return res, out.Ended.err()
}

func (l leaves) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	w := workflowOf(ctx)
	in := &CommandInput{RunID: c.RunID, Visit: c.Visit, Argv: c.Argv, Script: c.Script, Dir: c.Dir, Home: c.Home, Env: c.Env, Timeout: c.Timeout, KeyEnvs: l.keyEnvs, Scope: l.ws.scopeAt(c.Dir), Sandbox: c.Sandbox}
	var out CommandOutput
	if n := commandSize(in); n > maxLeafInput {
		return nil, tooLarge("command with its environment", n)
	}
	if err := l.cont.admit(w, false); err != nil {
		return nil, settle(ctx, w)
	}
	err := untilOpened(w, func() workflow.Future {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(w, l.options(c.Visit, l.queue, c.Timeout, false)), CommandActivity, in)
	}, &out)
	l.cont.done()
	if err != nil {
		return nil, l.failed(ctx, w, err, "")
	}
	if out.Result != nil {
		out.Result.Worker = out.Worker
	}
	return out.Result, out.Ended.err()
}

// lost keeps the attempts of visit that were sent and lost, for its end
// fact (recorder.Fact).
func (l leaves) lost(visit string, sent []record.Sent) {
	if l.rec == nil || len(sent) == 0 {
		return
	}
	if l.rec.sent == nil {
		l.rec.sent = map[string][]record.Sent{}
	}
	l.rec.sent[visit] = append(l.rec.sent[visit], sent...)
}

// lastSent are the attempts an activity that outlasted its retries sent,
// as its last heartbeat tells them: every attempt, the last included.
func lastSent(err error) []record.Sent {
	var te *temporal.TimeoutError
	if !errors.As(err, &te) || !te.HasLastHeartbeatDetails() {
		return nil
	}
	var last Progress
	var sent []record.Sent
	if te.LastHeartbeatDetails(&last, &sent) != nil || last.Attempt == 0 {
		return nil
	}
	s := record.Sent{Attempt: int(last.Attempt), Worker: last.Worker}
	if last.Tokens > 0 {
		s.Tokens = &last.Tokens
	}
	return append(sent, s)
}

// placed is the agent with its Source absolute, as the run recorded it:
// a relative one is relative to the directory the client read the flow
// from, not to wherever a worker runs; the worker then maps it through its
// --workdir. Pure string work on the workflow's input: deterministic.
func (l leaves) placed(a *flows.Agent) *flows.Agent {
	if a == nil || a.Source == "" || filepath.IsAbs(a.Source) || l.origin == "" {
		return a
	}
	c := *a
	c.Source = filepath.Join(l.origin, a.Source)
	return &c
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
