package temporal

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// endOf is the end fact of visit.
func endOf(facts []*record.Fact, visit string) *record.Fact {
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == visit {
			return f
		}
	}
	return nil
}

// TestWorkflowWaitsOnItsTimerAndSignals: in the run workflow, a wait for
// a time ends on a workflow timer; an event signalled before its wait is
// reached is kept and taken when it is, a second delivery of other data
// changing nothing; an event's timeout takes its default, or fails
// `timeout` without one.
func TestWorkflowWaitsOnItsTimerAndSignals(t *testing.T) {
	h := newHarness(t, &scripted{})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(SignalEvent, EventSignal{Event: "deployed", Data: json.RawMessage(`{"url":"first"}`), By: "api", ID: "a"})
		h.env.SignalWorkflow(SignalEvent, EventSignal{Event: "deployed", Data: json.RawMessage(`{"url":"second"}`), By: "api", ID: "b"})
	}, time.Minute)
	out, facts := h.run(`name: f
nodes:
  - {id: pause, wait: {for: 2h}}
  - {id: deployed, wait: {event: deployed}, output: {url: string}}
  - {id: review, wait: {event: review, timeout: 1h, default: "none"}}
  - id: after
    run: [echo, "${{ deployed.output.url }} ${{ review.output }}"]
`, nil)
	if !out.OK {
		t.Fatalf("the run ended %+v", out)
	}
	expectEnds(t, facts, map[string]string{"pause": "ok", "deployed": "ok", "review": "ok", "after": "ok"})
	if e := endOf(facts, "deployed"); fmt.Sprint(e.Output) != "map[url:first]" || e.Answer == nil || e.Answer.By != "api" {
		t.Errorf("the event's wait ended with %v (answer %+v), want the first delivery's data, by api", e.Output, e.Answer)
	}
	if e := endOf(facts, "review"); e.Output != "none" || e.Answer == nil || !e.Answer.Default {
		t.Errorf("the timed-out wait ended with %v (answer %+v), want its default", e.Output, e.Answer)
	}
	var waited int
	for _, f := range facts {
		if f.Type == record.FactWaiting {
			waited++
		}
	}
	if waited != 3 {
		t.Errorf("%d waiting facts, want one per wait", waited)
	}
	p, d := endOf(facts, "pause"), endOf(facts, "review")
	if at, err := time.Parse(time.RFC3339, fmt.Sprint(p.Output)); err != nil || d.Time.Sub(at) < time.Hour {
		t.Errorf("the time wait ended at %v (%v), the timeout at %v: want the timers' times", p.Output, err, d.Time)
	}

	h = newHarness(t, &scripted{})
	out, facts = h.run("name: f\nnodes:\n  - {id: review, wait: {event: review, timeout: 1h}}\n", nil)
	if out.OK {
		t.Fatalf("a wait timed out without a default ended %+v, want it failed", out)
	}
	expectEnds(t, facts, map[string]string{"review": "timeout"})
}
