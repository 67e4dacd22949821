package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// session is one subagent session of a memory scope. Its mutex makes a
// session serve one visit at a time (SPEC 3.4).
type session struct {
	mu sync.Mutex
	id string
}

func (r *runner) session(key string) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[key]
	if s == nil {
		s = &session{}
		r.sessions[key] = s
	}
	return s
}

// cancelled names why ctx ended, as a failure of the visit at path. The
// visit fills in its node's position when the failure reaches it.
func cancelled(ctx context.Context, path string) *Failure {
	return causeFailure(context.Cause(ctx), path)
}

// causeFailure is the failure of the visit at path whose context ended
// for cause.
func causeFailure(cause error, path string) *Failure {
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

// model resolves the model of an agent turn (SPEC 3.6): --model, then the
// flow's model, then each calling flow's, then the agent's own.
func (r *runner) model(fr *frame, a *flows.Agent) string {
	if r.opts.Model != "" {
		return r.opts.Model
	}
	for f := fr; f != nil; f = f.parent {
		if f.flow.Model != "" {
			return f.flow.Model
		}
	}
	return a.Model
}

// turnTimeout resolves the bound on one turn: --timeout, the node, the flow,
// each calling flow, then 30 minutes.
func (r *runner) turnTimeout(fr *frame, n *flows.Node) time.Duration {
	if r.opts.Timeout > 0 {
		return r.opts.Timeout
	}
	if n.Timeout > 0 {
		return n.Timeout
	}
	for f := fr; f != nil; f = f.parent {
		if f.flow.Timeout > 0 {
			return f.flow.Timeout
		}
	}
	if r.opts.DefaultTimeout > 0 {
		return r.opts.DefaultTimeout
	}
	return defaultTurnTimeout
}

func (r *runner) agent(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	prompt, err := r.turnText(n, vars)
	if err != nil {
		return condition(err)
	}
	a := n.Agent
	o := &outcome{model: r.model(fr, a)}
	homePath := path
	var sess *session
	if n.Memory != "" {
		scope := fr.scopes[n.Memory]
		homePath = scope
		o.scope = scope + "\x00" + a.Name
		sess = r.session(o.scope)
		sess.mu.Lock()
		defer sess.mu.Unlock()
	}
	home := r.store.home(homePath)
	timeout := r.turnTimeout(fr, n)
	o.timeout = timeout
	driver := r.opts.Drivers[a.Driver]
	var usage Usage
	delay := r.opts.Backoff
	for attempt := 1; ; attempt++ {
		o.attempts = attempt
		t := &Turn{RunID: r.opts.RunID, Visit: path, Agent: a, Model: o.model, Prompt: prompt, OutputSchema: n.OutputSchema,
			Home: home, WorkDir: r.opts.WorkDir, Timeout: timeout, Progress: r.progress(path, a.Driver, o.model)}
		if sess != nil {
			t.Session = sess.id
		}
		answer, fail := r.turn(ctx, fr, driver, t, &usage, sess)
		var out any = answer
		if fail == nil && n.Typed {
			out, fail = r.typed(ctx, fr, driver, t, answer, n, &usage, sess)
		}
		if fail == nil {
			o.output, o.usage = out, &usage
			if sess != nil {
				o.session = sess.id
			}
			r.usage.add(path, n.ID, a.Name, usage)
			r.overflow(o, home, a.Name)
			return o
		}
		retriable := fail.Kind == schema.FailProvider || fail.Kind == schema.FailTimeout || fail.Kind == schema.FailSchema
		if !retriable || attempt > n.Retry || ctx.Err() != nil {
			o.fail, o.usage = fail, &usage
			r.usage.add(path, n.ID, a.Name, usage)
			return o
		}
		select {
		case <-ctx.Done():
			o.fail, o.usage = cancelled(ctx, path), &usage
			r.usage.add(path, n.ID, a.Name, usage)
			return o
		case <-time.After(delay):
		}
		delay = min(delay*2, 30*time.Second)
	}
}

// turn runs one driver turn under the run-wide cap and the turn timeout,
// and classifies how it ended.
func (r *runner) turn(ctx context.Context, fr *frame, d Driver, t *Turn, usage *Usage, sess *session) (string, *Failure) {
	if f := r.budgetRefusal(fr, t.Agent.Name); f != nil {
		return "", f
	}
	// A slot is free most of the time: taking it without a second case
	// costs no select over two channels.
	select {
	case r.live <- struct{}{}:
	default:
		select {
		case r.live <- struct{}{}:
		case <-ctx.Done():
			return "", cancelled(ctx, t.Visit)
		}
	}
	defer func() { <-r.live }()
	start := time.Now()
	tc := newTurnContext(ctx, start.Add(t.Timeout))
	defer tc.release()
	var tctx context.Context = tc
	watched := t
	if len(fr.meters) > 0 {
		bctx, stop := context.WithCancelCause(tctx)
		defer stop(nil)
		tctx = bctx
		w := *t
		w.Progress = watchBudget(fr, stop, t.Progress)
		watched = &w
	}
	res, err := d.Turn(tctx, watched)
	if res != nil {
		usage.addTurn(res.Usage, time.Since(start))
		fr.charge(&res.Usage)
		r.noteTurn(t.Agent.Name, res.Usage)
		if sess != nil && res.Session != "" {
			sess.id = res.Session
		}
	}
	if tctx.Err() != nil {
		cause := tc.cause()
		if tctx != context.Context(tc) { // the budget's, around tc
			cause = context.Cause(tctx)
		}
		return "", causeFailure(cause, t.Visit)
	}
	switch {
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
func (r *runner) typed(ctx context.Context, fr *frame, d Driver, t *Turn, answer string, n *flows.Node, usage *Usage, sess *session) (any, *Failure) {
	v, err := parseTyped(answer, n.Output)
	if err == nil {
		return v, nil
	}
	retry := *t
	retry.Prompt = fmt.Sprintf("%s\n\n## Your previous answer did not fit\n%v\n\nYour previous answer was:\n%s\n\nAnswer again with only the JSON value.", t.Prompt, err, fence(answer))
	if sess != nil {
		retry.Session = sess.id
	}
	answer2, fail := r.turn(ctx, fr, d, &retry, usage, sess)
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
		r.emit(&Event{Type: "progress", Visit: path, Driver: driver, Model: model, Activity: p.Activity, Tokens: p.Tokens})
	}
}

// overflowLimit is the size above which an answer is handed on as a file.
const overflowLimit = 50 << 10

func (r *runner) overflow(o *outcome, home, agent string) {
	s, ok := o.output.(string)
	if !ok || len(s) <= overflowLimit {
		return
	}
	path := home + "/" + agent + "-answer.md"
	if err := os.MkdirAll(home, 0o755); err != nil {
		return
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err == nil {
		o.file = path
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
	c.Home = r.store.home(path)
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = defaultRunTimeout
	}
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	res, err := r.opts.Commands.Run(tctx, c)
	switch {
	case tctx.Err() != nil:
		return &outcome{fail: cancelled(tctx, path)}
	case errors.Is(err, ErrUnavailable):
		return &outcome{fail: &Failure{Kind: schema.FailUnavailable, Message: err.Error()}}
	case err != nil:
		return &outcome{fail: &Failure{Kind: schema.FailUnavailable, Message: err.Error()}}
	}
	return &outcome{output: map[string]any{"passed": res.Passed, "exit": res.Exit, "report": res.Report}}
}
