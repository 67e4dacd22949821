package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// session is one subagent session of a memory scope. Its mutex, the
// runtime's, makes a session serve one visit at a time (SPEC 3.4).
type session struct {
	mu Mutex
	id string
}

func (r *runner) session(key rundir.Scope) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[key]
	if s == nil {
		s = &session{mu: r.rt.NewMutex()}
		r.sessions[key] = s
	}
	return s
}

// cancelled names why ctx ended, as a failure of the visit at path. The
// visit fills in its node's position when the failure reaches it.
func cancelled(ctx context.Context, path string) *Failure {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	kind := schema.FailStopped
	switch {
	case errors.Is(cause, errCancelled):
		kind = schema.FailCancelled
	case errors.Is(cause, errTimeout):
		kind = schema.FailTimeout
	case errors.Is(cause, errBudget):
		kind = schema.FailBudget
	}
	return &Failure{Kind: kind, Message: cause.Error(), Visit: path}
}

func (r *runner) agent(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	prompt, err := r.turnText(n, vars)
	if err != nil {
		return condition(err)
	}
	a := n.Agent
	o := &outcome{agent: a.Name, model: r.opts.Settings.ResolveModel(fr.calls, a), timeout: r.opts.Settings.ResolveTimeout(fr.calls, n)}
	homePath := path
	var sess *session
	if n.Memory != "" {
		o.scope = &rundir.Scope{Path: fr.scopes[n.Memory], Agent: a.Name}
		homePath = o.scope.Path
		sess = r.session(*o.scope)
		if err := sess.mu.Lock(ctx); err != nil {
			o.fail = cancelled(ctx, path)
			return o
		}
		defer sess.mu.Unlock()
	}
	home := r.dir.Home(homePath)
	o.usage = &Usage{}
	delay := r.opts.Backoff
	for attempt := 1; ; attempt++ {
		o.attempts = attempt
		t := &Turn{RunID: r.opts.RunID, Visit: path, Agent: a, Model: o.model, Prompt: prompt, OutputSchema: n.OutputSchema,
			Home: home, WorkDir: r.opts.WorkDir, Timeout: o.timeout, Progress: r.progress(path, a.Driver, o.model)}
		answer, fail := r.turn(ctx, fr, t, o, sess)
		var out any = answer
		if fail == nil && n.Typed {
			out, fail = r.typed(ctx, fr, t, answer, n, o, sess)
		}
		if sess != nil {
			o.session = sess.id
		}
		if fail == nil {
			o.output = out
			return o
		}
		retriable := fail.Kind == schema.FailProvider || fail.Kind == schema.FailTimeout || fail.Kind == schema.FailSchema
		if !retriable || attempt > n.Retry || ctx.Err() != nil {
			o.fail = fail
			return o
		}
		if err := r.rt.Sleep(ctx, delay); err != nil {
			o.fail = cancelled(ctx, path)
			return o
		}
		delay = min(delay*2, 30*time.Second)
	}
}

// turn runs one turn through the LeafRunner under the run-wide cap and the
// budgets, adds what it spent to o, and classifies how it ended.
func (r *runner) turn(ctx context.Context, fr *frame, t *Turn, o *outcome, sess *session) (string, *Failure) {
	if f := r.budgetRefusal(fr, t.Agent.Name); f != nil {
		return "", f
	}
	if err := r.live.Acquire(ctx); err != nil {
		return "", cancelled(ctx, t.Visit)
	}
	defer r.live.Release()
	if sess != nil {
		t.Session = sess.id
	}
	t.Watch, t.TokensLeft = fr.watch()
	res, err := r.leaves.Turn(ctx, t)
	if res != nil {
		o.usage.Add(res.Usage)
		fr.charge(&res.Usage)
		r.noteTurn(t.Agent.Name, res.Usage)
		if sess != nil && res.Session != "" {
			sess.id = res.Session
		}
		o.file = res.File
		if res.Worker != "" {
			o.worker, o.transcript = res.Worker, res.Transcript
		}
	}
	if ctx.Err() != nil {
		return "", cancelled(ctx, t.Visit)
	}
	switch {
	case errors.Is(err, errTimeout):
		return "", &Failure{Kind: schema.FailTimeout, Message: errTimeout.Error()}
	case errors.Is(err, errBudget):
		return "", &Failure{Kind: schema.FailBudget, Message: errBudget.Error()}
	case errors.Is(err, ErrUnavailable):
		return "", &Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	case err != nil:
		return "", &Failure{Kind: schema.FailProvider, Message: err.Error()}
	case res == nil:
		return "", &Failure{Kind: schema.FailProvider, Message: "the driver returned no result"}
	case res.Status != Completed:
		msg := string(res.Status)
		if len(res.Diagnostics) > 0 {
			msg += ": " + strings.Join(res.Diagnostics, "; ")
		}
		return "", &Failure{Kind: schema.FailProvider, Message: msg}
	}
	return res.Output, nil
}

// typed parses and validates a typed answer; an answer that does not fit is
// sent back once with the reason, then the visit fails `schema`.
func (r *runner) typed(ctx context.Context, fr *frame, t *Turn, answer string, n *flows.Node, o *outcome, sess *session) (any, *Failure) {
	v, err := parseTyped(answer, n.Output)
	if err == nil {
		return v, nil
	}
	retry := *t
	retry.Prompt = fmt.Sprintf("%s\n\n## Your previous answer did not fit\n%v\n\nYour previous answer was:\n%s\n\nAnswer again with only the JSON value.", t.Prompt, err, fence(answer))
	answer2, fail := r.turn(ctx, fr, &retry, o, sess)
	if fail != nil {
		return nil, fail
	}
	v, err = parseTyped(answer2, n.Output)
	if err != nil {
		return nil, &Failure{Kind: schema.FailSchema, Message: "the answer did not fit the declared output twice: " + err.Error()}
	}
	return v, nil
}

func (r *runner) progress(path, driver, model string) func(Progress) {
	return func(p Progress) {
		r.emit(&Event{Type: rundir.EventProgress, Visit: path, Driver: driver, Model: model, Activity: p.Activity, Tokens: p.Tokens})
	}
}

func (r *runner) command(ctx context.Context, n *flows.Node, vars map[string]any, path string) *outcome {
	c := &Command{RunID: r.opts.RunID, Visit: path, Dir: r.opts.WorkDir, Progress: r.progress(path, "run", "")}
	var err error
	if n.Script != nil {
		c.Script, err = render(n.Script, vars)
	} else {
		c.Argv = make([]string, len(n.Argv))
		for i, a := range n.Argv {
			if c.Argv[i], err = render(a, vars); err != nil {
				break
			}
		}
	}
	for _, e := range n.Env {
		if err != nil {
			break
		}
		var v string
		v, err = render(e.Value, vars)
		c.Env = append(c.Env, e.Name+"="+v)
	}
	if err != nil {
		return condition(err)
	}
	c.Home = r.dir.Home(path)
	o := &outcome{timeout: flows.RunTimeout(n)}
	c.Timeout = o.timeout
	res, err := r.leaves.Command(ctx, c)
	switch {
	case ctx.Err() != nil:
		o.fail = cancelled(ctx, path)
	case errors.Is(err, errTimeout):
		o.fail = &Failure{Kind: schema.FailTimeout, Message: errTimeout.Error()}
	case err != nil:
		o.fail = &Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	default:
		o.output = map[string]any{"passed": res.Passed, "exit": res.Exit, "report": res.Report}
		o.worker = res.Worker
	}
	return o
}
