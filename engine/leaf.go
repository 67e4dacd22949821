package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowrun/flow/engine/delegation"
	"github.com/flowrun/flow/engine/ledger"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/replay"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// session is one subagent session of a memory scope. Its mutex, the
// runtime's, makes a session serve one visit at a time (docs/flow-files.md, agent: memory).
type session struct {
	mu    Mutex
	id    string
	chain string // the chain of the keys of the scope's visits so far
}

func (r *runner) session(key record.Scope) *session {
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
func cancelled(ctx context.Context, path string) *record.Failure {
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
	return &record.Failure{Kind: kind, Message: cause.Error(), Visit: path}
}

func (r *runner) agent(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	an := n.AsAgent()
	prompt, err := r.turnText(fr, n, vars)
	var big *promptTooLarge
	if errors.As(err, &big) {
		return &outcome{fail: &record.Failure{Kind: schema.FailRefused, Message: err.Error()}}
	}
	if err != nil {
		return condition(err)
	}
	a := an.Agent
	o := &outcome{agent: a.Name, model: r.opts.Settings.ResolveModel(fr.calls, a), timeout: r.opts.Settings.ResolveTimeout(fr.calls, n)}
	homePath := path
	var sess *session
	if an.Memory != "" {
		o.scope = &record.Scope{Path: fr.scopes[an.Memory], Agent: a.Name}
		homePath = o.scope.Path
		sess = r.session(*o.scope)
		if err := sess.mu.Lock(ctx); err != nil {
			o.fail = cancelled(ctx, path)
			return o
		}
		defer sess.mu.Unlock()
	}
	home := r.dir.Home(homePath)
	o.home = homePath
	o.key = r.visitKey(ctx, fr, n, path, o.model, prompt, sess, nil)
	o.usage = r.killedUsage(fr, path)
	o.deleg = r.delegation(fr, n, path)
	delay := r.opts.Backoff
	for attempt := 1; ; attempt++ {
		o.attempts = attempt
		t := &Turn{RunID: r.opts.RunID, Visit: path, Agent: a, Model: o.model, Prompt: prompt, OutputSchema: an.OutputSchema,
			Home: home, WorkDir: r.workDir(fr), Timeout: o.timeout, Progress: r.progress(path, a.Driver, o.model),
			Secrets: r.secrets(), Key: replay.Offered(n, o.key), Tools: r.toolLog(path)}
		answer, fail := r.turnOf(ctx, fr, t, o, sess)
		var out any = answer.text
		if fail == nil && an.Typed {
			out, fail = r.typed(ctx, fr, t, answer, n, o, sess)
		}
		if sess != nil {
			o.session = sess.id
		}
		if fail == nil {
			o.output, o.file, o.size = out, answer.file, answer.size
			chained(sess, o.key)
			return o
		}
		retriable := fail.Kind == schema.FailProvider || fail.Kind == schema.FailTimeout || fail.Kind == schema.FailSchema
		if !retriable || attempt > an.Retry || ctx.Err() != nil {
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
// budgets — booking its expected spend before it starts and settling it
// with what it spent when it ends —, adds what it spent to o, and
// classifies how it ended. The
// answer comes back bounded (AnswerLimit), with the file that holds it
// whole when it is longer (the LeafRunner stores it).
func (r *runner) turn(ctx context.Context, fr *frame, t *Turn, o *outcome, sess *session) (reply, *record.Failure) {
	slot, err := r.takeLive(ctx)
	if err != nil {
		return reply{}, cancelled(ctx, t.Visit)
	}
	defer slot.Release()
	b, refused := r.book(ctx, fr, t.Agent.Name, t.Visit)
	if refused != nil {
		return reply{}, refused
	}
	res, fail, err := r.leaf(ctx, t, o, b, slot, sess)
	if fail != nil {
		return reply{}, fail
	}
	if res != nil {
		r.took(t, o, sess, res, err)
	}
	return turnEnd(ctx, t, res, err)
}

// took adds what a turn that returned res spent to o, and notes it.
func (r *runner) took(t *Turn, o *outcome, sess *session, res *TurnResult, err error) {
	o.usage.Add(res.Usage)
	if err == nil && res.Status == Completed {
		r.ledger.Note(t.Agent.Name, res.Usage)
	}
	if sess != nil && res.Session != "" {
		sess.id = res.Session
	}
	if res.Worker != "" || res.Reused != nil {
		o.worker, o.transcript = res.Worker, res.Transcript
	}
	o.reused = res.Reused
}

// turnEnd classifies how a turn ended: its answer, or its failure.
func turnEnd(ctx context.Context, t *Turn, res *TurnResult, err error) (reply, *record.Failure) {
	if ctx.Err() != nil {
		return reply{}, cancelled(ctx, t.Visit)
	}
	switch {
	case errors.Is(err, errTimeout):
		return reply{}, &record.Failure{Kind: schema.FailTimeout, Message: errTimeout.Error()}
	case errors.Is(err, errBudget):
		return reply{}, &record.Failure{Kind: schema.FailBudget, Message: errBudget.Error()}
	case errors.Is(err, ErrUnavailable):
		return reply{}, &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	case errors.Is(err, record.ErrRateLimit):
		return reply{}, record.RateLimited(err)
	case err != nil:
		return reply{}, &record.Failure{Kind: schema.FailProvider, Message: err.Error()}
	case res == nil:
		return reply{}, &record.Failure{Kind: schema.FailProvider, Message: "the driver returned no result"}
	case res.Status != Completed:
		msg := string(res.Status)
		if len(res.Diagnostics) > 0 {
			msg += ": " + strings.Join(res.Diagnostics, "; ")
		}
		return reply{}, &record.Failure{Kind: schema.FailProvider, Message: msg}
	}
	return reply{text: res.Output, file: res.File, size: res.Size}, nil
}

// leaf runs t through the LeafRunner, serving its delegate calls, and
// settles its booking with what it spent. A delegate call that found
// nothing left of a budget ends the turn (turnStop): its error is then
// errBudget.
func (r *runner) leaf(ctx context.Context, t *Turn, o *outcome, b *ledger.Booking, slot *delegation.Slot, sess *session) (res *TurnResult, fail *record.Failure, err error) {
	if sess != nil {
		t.Session = sess.id
	}
	t.Watch, t.TokensLeft = b.Watch()
	if b != nil {
		t.Affords = b.Affords
	}
	stopped := r.stoppable(ctx, b, func(tctx context.Context, ts *turnStop) {
		defer ts.turnEnded()
		if o.deleg != nil {
			d, closeDelegation, f := r.serve(tctx, o.deleg, slot, ts)
			if f != nil {
				fail = f
				return
			}
			defer closeDelegation() // after turnEnded: the calls held for the turn's end return first
			t.Delegate = d
		}
		res, err = r.leaves.Turn(tctx, t)
		ts.turnEnded()
	})
	if fail != nil {
		r.ledger.Settle(b, nil, false)
		return nil, fail, nil
	}
	if stopped && ctx.Err() == nil {
		err = errBudget
	}
	var spent *record.Usage
	if res != nil {
		spent = &res.Usage
	}
	r.ledger.Settle(b, spent, errors.Is(err, errBudget))
	return res, nil, err
}

// typed parses and validates a typed answer, whole (the LeafRunner hands
// on a typed answer whole up to TypedLimit); an answer that does not fit is
// sent back once with the reason, then the visit fails `schema`.
func (r *runner) typed(ctx context.Context, fr *frame, t *Turn, answer reply, n *flows.Node, o *outcome, sess *session) (any, *record.Failure) {
	whole, err := answer.whole()
	if err != nil {
		return nil, &record.Failure{Kind: schema.FailSchema, Message: err.Error()}
	}
	v, err := parseTyped(whole, n.Output)
	if err == nil {
		return v, nil
	}
	retry := *t
	retry.Prompt = fmt.Sprintf("%s\n\n## Your previous answer did not fit\n%v\n\nYour previous answer was:\n%s\n\nAnswer again with only the JSON value.", t.Prompt, err, fence(answer.shown()))
	answer2, fail := r.turn(ctx, fr, &retry, o, sess)
	if fail != nil {
		return nil, fail
	}
	if whole, err = answer2.whole(); err == nil {
		v, err = parseTyped(whole, n.Output)
	}
	if err != nil {
		return nil, &record.Failure{Kind: schema.FailSchema, Message: "the answer did not fit the declared output twice: " + err.Error()}
	}
	return v, nil
}

func (r *runner) progress(path, driver, model string) func(Progress) {
	return func(p Progress) {
		r.emit(&record.Event{Type: record.EventProgress, Visit: path, Driver: driver, Model: model, Activity: p.Activity, Tokens: p.Tokens})
	}
}

func (r *runner) command(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	rn := n.AsRun()
	c := &Command{RunID: r.opts.RunID, Visit: path, Dir: r.workDir(fr), Progress: r.progress(path, "run", ""), Sandbox: rn.Sandbox}
	var err error
	if rn.Script != nil {
		c.Script = rn.Script.Text
	} else {
		c.Argv = make([]string, len(rn.Argv))
		for i, a := range rn.Argv {
			if c.Argv[i], err = renderArg(a, vars); err != nil {
				break
			}
		}
	}
	for _, e := range rn.Env {
		if err != nil {
			break
		}
		var v string
		v, err = renderArg(e.Value, vars)
		c.Env = append(c.Env, e.Name+"="+v)
	}
	if rn.Script != nil {
		// The script's values come last: its own variables win over env:.
		for _, sv := range rn.Script.Vars {
			if err != nil {
				break
			}
			var v any
			if v, err = eval(sv.Expr, vars); err == nil {
				err = noNUL(text(v), sv.Expr)
				c.Env = append(c.Env, sv.Name+"="+text(v))
			}
		}
	}
	if err != nil {
		return condition(err)
	}
	c.Home = r.dir.Home(path)
	o := &outcome{timeout: flows.RunTimeout(n), home: path}
	c.Timeout = o.timeout
	o.key = r.visitKey(ctx, fr, n, path, "", "", nil, c)
	c.Key, c.Reuse = replay.Offered(n, o.key), n.Reuse == flows.ReuseAlways
	res, err := r.leaves.Command(ctx, c)
	if res != nil {
		o.worker, o.reused = res.Worker, res.Reused
	}
	switch {
	case ctx.Err() != nil:
		o.fail = cancelled(ctx, path)
	case errors.Is(err, errTimeout):
		o.fail = &record.Failure{Kind: schema.FailTimeout, Message: errTimeout.Error()}
	case err != nil:
		o.fail = &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	default:
		o.output = map[string]any{"passed": res.Passed, "exit": res.Exit, "report": res.Report}
	}
	return o
}

// renderArg renders an argument or environment value of a command, which
// a process cannot receive with a NUL byte in it.
func renderArg(t *flows.Template, vars map[string]any) (string, error) {
	s, err := render(t, vars)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("%q renders a NUL byte, which a command's arguments and environment cannot hold", t.Source)
	}
	return s, nil
}

// noNUL refuses a script value holding a NUL byte.
func noNUL(s string, e *flows.Expr) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("${{ %s }} (%s) holds a NUL byte, which a command's environment cannot hold", strings.TrimSpace(e.Source), e.Pos)
	}
	return nil
}
