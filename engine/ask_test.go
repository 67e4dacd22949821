package engine_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// scriptedAsker answers after a delay, or never (delay < 0).
type scriptedAsker struct {
	answer string
	by     string
	delay  time.Duration
	asked  []*Question
}

func (a *scriptedAsker) Ask(ctx context.Context, q *Question) (Answer, error) {
	a.asked = append(a.asked, q)
	if a.delay < 0 {
		<-ctx.Done()
		return Answer{}, context.Cause(ctx)
	}
	select {
	case <-time.After(a.delay):
		return Answer{Value: a.answer, By: a.by}, nil
	case <-ctx.Done():
		return Answer{}, context.Cause(ctx)
	}
}

func askEnd(t *testing.T, facts []*record.Fact, visit string) *record.Fact {
	t.Helper()
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == visit {
			return f
		}
	}
	t.Fatalf("no end fact for %s", visit)
	return nil
}

func TestAskAnswerIsJournaledWithWhoAndWhen(t *testing.T) {
	p := load(t, "ask", `name: ask
nodes:
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold, timeout: 1h}
`)
	onHosts(t, func(t *testing.T, h host) {
		asker := &scriptedAsker{answer: "ship", by: "alice"}
		before := h.now()
		res, facts := executeOn(t, h, p, &fakeDriver{}, Options{Asker: asker})
		if !res.OK || res.Output != "ship" {
			t.Fatalf("the answer should be the output: %+v", res)
		}
		q := asker.asked[0]
		if q.Visit != "ship" || q.Text != "Ship it?" || !q.HasDefault || q.Default != "hold" || q.Timeout != time.Hour {
			t.Fatalf("question: %+v", q)
		}
		end := askEnd(t, facts, "ship")
		if end.Answer == nil || end.Answer.By != "alice" || end.Answer.Default || end.Answer.Time.Before(before) {
			t.Fatalf("the end fact should say alice answered: %+v", end.Answer)
		}
	})
}

func TestAskTimeout(t *testing.T) {
	tests := []struct {
		name, flow string
		ok         bool
		output     any
		kind       schema.FailKind
	}{
		{"takes the default", `{id: ship, ask: Ship it?, default: hold, timeout: 10m}`, true, "hold", ""},
		{"fails without a default", `{id: ship, ask: Ship it?, timeout: 10m}`, false, nil, schema.FailTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := load(t, "ask", "name: ask\nnodes:\n  - "+tt.flow+"\n")
				start := time.Now()
				res, facts := execute(t, p, &fakeDriver{}, Options{Asker: &scriptedAsker{delay: -1}})
				// The fake clock also moves for the run's own short waits
				// (a journal's lock retried on a busy machine): the ask
				// ends at its timeout, give or take those.
				if waited := time.Since(start); waited < 10*time.Minute || waited > 10*time.Minute+time.Second {
					t.Errorf("waited %s, want the timeout, 10m", waited)
				}
				if res.OK != tt.ok || (tt.ok && res.Output != tt.output) || (!tt.ok && res.Failure.Root().Kind != tt.kind) {
					t.Fatalf("result: ok %v output %v failure %+v", res.OK, res.Output, res.Failure)
				}
				if end := askEnd(t, facts, "ship"); tt.ok && (end.Answer == nil || !end.Answer.Default || end.Answer.By != "") {
					t.Fatalf("a timed-out ask records that the default was taken: %+v", end.Answer)
				}
			})
		})
	}
}

func TestAskAnswerOutsideOptionsIsRefused(t *testing.T) {
	p := load(t, "ask", `name: ask
nodes:
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
`)
	onHosts(t, func(t *testing.T, h host) {
		res, _ := executeOn(t, h, p, &fakeDriver{}, Options{Asker: &scriptedAsker{answer: "maybe"}})
		if res.OK || res.Failure.Root().Kind != schema.FailRefused {
			t.Fatalf("an answer outside the options must fail refused: %+v", res.Failure)
		}
	})
}

// TestResumeKeepsTheAnswer stops a run after its ask was answered; the
// resume replays the ask with its answer and asks nobody again.
func TestResumeKeepsTheAnswer(t *testing.T) {
	p := load(t, "ask", `name: ask
nodes:
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
  - {id: wait, run: [sleep, "3600"]}
  - {id: after, run: [echo, "${{ ship.output }}"]}
`)
	onHosts(t, func(t *testing.T, h host) {
		ctx, cancel := context.WithCancelCause(context.Background())
		stopper := &stopOnStart{visit: "wait", cancel: cancel}
		res, facts, err := h.walk(ctx, t, p, local.Config{Commands: stopper}, Options{Asker: &scriptedAsker{answer: "ship", by: "bob"}})
		if err != nil || res.Status() != record.StatusStopped {
			t.Fatalf("first attempt should stop: %v %+v", err, res)
		}
		second := &scriptedAsker{answer: "hold", by: "carol"}
		res, facts, err = h.resume(context.Background(), t, p, res, facts, local.Config{Commands: fakeCommands{}}, Options{Asker: second})
		if err != nil || !res.OK {
			t.Fatalf("resume: %v %+v", err, res)
		}
		if len(second.asked) != 0 {
			t.Fatalf("the resume asked again: %+v", second.asked)
		}
		var answers []string
		for _, f := range facts {
			if f.Type == record.FactEnd && f.Visit == "ship" {
				answers = append(answers, f.Answer.By)
			}
		}
		if len(answers) != 1 || answers[0] != "bob" {
			t.Fatalf("the journal should keep bob's one answer: %v", answers)
		}
	})
}

// stopOnStart stops the run (as Ctrl-C does) when the visit starts its
// command, and otherwise acts as fakeCommands.
type stopOnStart struct {
	visit  string
	cancel context.CancelCauseFunc
}

func (s *stopOnStart) Run(ctx context.Context, c *Command) (*CommandResult, error) {
	if c.Visit == s.visit {
		s.cancel(ErrStopped)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return fakeCommands{}.Run(ctx, c)
}

// TestAskInterpolatesAndShows: the question renders its ${{ }} from the
// nodes before it, and show: hands the asker those nodes' outputs whole:
// text as it is, typed values as JSON.
func TestAskInterpolatesAndShows(t *testing.T) {
	long := strings.Repeat("a line of the release notes\n", 2000) // over AnswerLimit: kept in a file
	p := load(t, "ask", "name: ask\n"+agents+`nodes:
  - {id: notes, agent: worker, prompt: write}
  - {id: facts, agent: judge, prompt: count, output: {changes: integer}}
  - id: publish
    ask: "Publish ${{ facts.output.changes }} changes?"
    show: [notes, facts]
    options: [publish, hold]
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{answer: func(t *Turn) (string, error) {
			if t.Agent.Name == "judge" {
				return `{"changes": 3}`, nil
			}
			return long, nil
		}}
		asker := &scriptedAsker{answer: "publish", by: "alice"}
		res, _ := executeOn(t, h, p, d, Options{Asker: asker})
		if !res.OK || res.Output != "publish" {
			t.Fatalf("run: %+v", res)
		}
		q := asker.asked[0]
		if q.Text != "Publish 3 changes?" {
			t.Errorf("question = %q, want the changes interpolated", q.Text)
		}
		if len(q.Shown) != 2 || q.Shown[0].Node != "notes" || rundir.WholeAnswer(q.Shown[0].Text, q.Shown[0].File) != long || q.Shown[1].Node != "facts" ||
			!strings.Contains(q.Shown[1].Text, `"changes": 3`) {
			t.Errorf("shown = %+v, want notes whole and facts as JSON", q.Shown)
		}
	})
}
