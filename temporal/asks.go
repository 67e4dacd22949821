package temporal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sourcegraph/conc"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
)

// An attended run's asks are Temporal signals (docs/temporal.md, Asks):
// the workflow keeps its pending questions, which QueryAsks reads; the
// client that mirrors the run hands each to its own Asker (flow serve's
// page and API) and sends the answer as SignalAnswer. An ask's timeout is
// the walker's, a workflow timer, and its default is taken in the
// workflow.
const (
	QueryAsks    = "flow.asks"
	SignalAnswer = "flow.answer"
)

// AnswerSignal answers the pending ask of Visit.
type AnswerSignal struct {
	Visit string `json:"visit"`
	Value string `json:"value"`
	By    string `json:"by,omitempty"`
}

// signalAsker is the engine.Asker of an attended run in its workflow.
// Coroutines run one at a time, so it needs no lock.
type signalAsker struct {
	pending []*engine.Question
	answers map[string]AnswerSignal
}

// newSignalAsker receives the run's answers on a coroutine of its own and
// answers the asks query.
func newSignalAsker(ctx workflow.Context) (*signalAsker, error) {
	a := &signalAsker{answers: map[string]AnswerSignal{}}
	if err := workflow.SetQueryHandler(ctx, QueryAsks, func() ([]*engine.Question, error) { return a.pending, nil }); err != nil {
		return nil, err
	}
	ch := workflow.GetSignalChannel(ctx, SignalAnswer)
	workflow.Go(ctx, func(c workflow.Context) {
		for {
			var s AnswerSignal
			ch.Receive(c, &s)
			// Only a question waiting takes an answer, once.
			if slices.ContainsFunc(a.pending, func(q *engine.Question) bool { return q.Visit == s.Visit }) {
				a.answers[s.Visit] = s
			}
		}
	})
	return a, nil
}

func (a *signalAsker) Ask(ctx context.Context, q *engine.Question) (engine.Answer, error) {
	w := workflowOf(ctx)
	a.pending = append(a.pending, q)
	defer func() {
		a.pending = slices.DeleteFunc(a.pending, func(p *engine.Question) bool { return p == q })
		delete(a.answers, q.Visit)
	}()
	if err := workflow.Await(w, func() bool { _, ok := a.answers[q.Visit]; return ok }); err != nil {
		return engine.Answer{}, settle(ctx, w)
	}
	s := a.answers[q.Visit]
	return engine.Answer{Value: s.Value, By: s.By}, nil
}

// relay hands the pending asks of a mirrored run to a local Asker and
// signals its answers back. Each ask is asked once, on a goroutine the
// relay owns, until it is answered or leaves the workflow's pending
// questions (its timeout took the default, the run stopped).
type relay struct {
	m      *mirror
	asker  engine.Asker
	mu     sync.Mutex
	asking map[string]context.CancelFunc
	wg     conc.WaitGroup
}

// newRelay is the relay of asker, or nil without one.
func newRelay(asker engine.Asker) *relay {
	if asker == nil {
		return nil
	}
	return &relay{asker: asker}
}

// of ties the relay to its mirror.
func (r *relay) of(m *mirror) {
	if r != nil {
		r.m = m
	}
}

// sync reads the workflow's pending asks and starts or ends the local
// ones to match.
func (r *relay) sync(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := r.m.c.Client.QueryWorkflow(qctx, r.m.ref.Workflow, r.m.ref.Execution, QueryAsks)
	if err != nil {
		return // no worker took the workflow yet, or it closed: the next poll tells
	}
	var pending []*engine.Question
	if v.Get(&pending) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asking == nil {
		r.asking = map[string]context.CancelFunc{}
	}
	for visit, stop := range r.asking {
		if !slices.ContainsFunc(pending, func(q *engine.Question) bool { return q.Visit == visit }) {
			stop()
			delete(r.asking, visit)
		}
	}
	for _, q := range pending {
		if _, ok := r.asking[q.Visit]; ok {
			continue
		}
		actx, stop := context.WithCancel(ctx)
		r.asking[q.Visit] = stop
		r.wg.Go(func() { r.ask(actx, q) })
	}
}

func (r *relay) ask(ctx context.Context, q *engine.Question) {
	ans, err := r.asker.Ask(ctx, q)
	if err != nil {
		return
	}
	err = r.m.c.Client.SignalWorkflow(context.WithoutCancel(ctx), r.m.ref.Workflow, r.m.ref.Execution, SignalAnswer,
		AnswerSignal{Visit: q.Visit, Value: ans.Value, By: ans.By})
	if err != nil {
		r.m.note(fmt.Sprintf("the answer to %s did not reach run %s on Temporal: %s", q.Visit, r.m.ref.Workflow, strings.TrimSpace(err.Error())))
	}
}

// close ends every local ask and waits for them.
func (r *relay) close() {
	r.mu.Lock()
	for _, stop := range r.asking {
		stop()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
