package engine_test

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// streamDriver streams its turns' tokens 100 at a time and ends a turn
// once it reached size(t) tokens, or when it is stopped; billed is what
// every turn spent, stopped or not, as a provider would bill it.
type streamDriver struct {
	size   func(t *Turn) int64
	cost   func(t *Turn) *float64
	billed atomic.Int64
	turns  atomic.Int32
}

func (d *streamDriver) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	d.turns.Add(1)
	want := d.size(t)
	var tok int64
	result := func(st TurnStatus) *TurnResult {
		d.billed.Add(tok)
		in := tok
		r := &TurnResult{Status: st, Output: "ok", Usage: record.Usage{Input: &in}}
		if d.cost != nil {
			r.Usage.Cost = d.cost(t)
		}
		return r
	}
	for tok < want {
		select {
		case <-ctx.Done():
			return result(Aborted), context.Cause(ctx)
		case <-time.After(2 * time.Millisecond):
		}
		tok = min(tok+100, want)
		t.Progress(Progress{Activity: "writing", Tokens: tok})
	}
	return result(Completed), nil
}

func runStream(t *testing.T, src string, d *streamDriver) (*Result, []*record.Fact) {
	t.Helper()
	return runStreamOn(t, hosts[0], src, d)
}

// runStreamOn is runStream on host h.
func runStreamOn(t *testing.T, h host, src string, d *streamDriver) (*Result, []*record.Fact) {
	t.Helper()
	p := load(t, "bud", src)
	res, facts, err := h.walk(context.Background(), t, p, local.Config{Drivers: map[string]Driver{"exec": d}}, Options{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	return res, facts
}

// Eight turns of 1,000 tokens at once under a budget of 2,500: the first
// runs alone (nothing prices it), the others reserve its size from what
// is left, and the run spends at most the budget plus one turn.
func TestParallelTurnsStayWithinTheirBudget(t *testing.T) {
	d := &streamDriver{size: func(*Turn) int64 { return 1000 }}
	res, facts := runStream(t, `name: bud
budget: {tokens: 2500}
`+agents+`nodes:
  - id: fan
    map: "[1, 2, 3, 4, 5, 6, 7, 8]"
    max: 8
    concurrency: 8
    do: [{id: each, agent: worker, prompt: x}]
`, d)
	billed := d.billed.Load()
	t.Logf("billed %d tokens under a budget of 2500 in %d turns", billed, d.turns.Load())
	if billed > 2500+1000 {
		t.Fatalf("the turns billed %d tokens under a budget of 2500 (%d turns sent)", billed, d.turns.Load())
	}
	if res.OK || res.Failure.Root().Kind != schema.FailBudget {
		t.Fatalf("want the turns that did not fit refused with budget, got %+v", res.Failure)
	}
	if got := rundir.Tally(facts).Total.Tokens(); got != billed {
		t.Fatalf("the journal holds %d tokens, the driver billed %d", got, billed)
	}
}

// Turns that grow past their reservation are stopped by what the others
// running beside them hold, not only by what ended: four turns of 3,000
// tokens, each reserving the 1,000 of the first turn, under 5,000.
func TestLiveWatchCountsTheOtherRunningTurns(t *testing.T) {
	d := &streamDriver{size: func(t *Turn) int64 {
		if t.Visit == "first" {
			return 1000
		}
		return 3000
	}}
	_, facts := runStream(t, `name: bud
budget: {tokens: 5000}
`+agents+`nodes:
  - {id: first, agent: worker, prompt: x}
  - id: fan
    map: "[1, 2, 3, 4]"
    max: 4
    concurrency: 4
    do: [{id: each, agent: worker, prompt: x}]
`, d)
	t.Logf("billed %d tokens under a budget of 5000", d.billed.Load())
	if billed := d.billed.Load(); billed > 5000+3000 {
		t.Fatalf("the turns billed %d tokens under a budget of 5000", billed)
	}
	if got := rundir.Tally(facts).Total.Tokens(); got != d.billed.Load() {
		t.Fatalf("the journal holds %d tokens, the driver billed %d", got, d.billed.Load())
	}
}

// A cost budget the first turn overspends (nothing priced it): the run
// goes on as before, and its result and end fact say by how much and why.
func TestUnpricedFirstTurnOverspendIsSaid(t *testing.T) {
	onHosts(t, func(t *testing.T, h host) {
		d := &streamDriver{size: func(*Turn) int64 { return 100 }, cost: func(*Turn) *float64 { c := 0.03; return &c }}
		res, facts := runStreamOn(t, h, `name: bud
budget: {cost: 0.025}
`+agents+`nodes:
  - {id: t1, agent: worker, prompt: x}
  - {id: t2, agent: worker, prompt: x}
`, d)
		if res.OK || res.Failure.Root().Kind != schema.FailBudget || res.Failure.Root().Visit != "t2" {
			t.Fatalf("want t2 refused with budget, got %+v", res.Failure)
		}
		if len(res.Overspend) != 1 {
			t.Fatalf("want one overspend, got %+v", res.Overspend)
		}
		o := res.Overspend[0]
		if math.Abs(o.Cost-0.005) > 1e-9 || o.LimitCost != 0.025 || !strings.Contains(o.Why, "could not be priced") || o.Budget != "flow bud" {
			t.Fatalf("overspend %+v", o)
		}
		end := facts[len(facts)-1]
		if end.Type != record.FactRun || len(end.Overspend) != 1 || end.Overspend[0] != o {
			t.Fatalf("the run's end fact does not record the overspend: %+v", end)
		}
		if s := o.String(); !strings.Contains(s, "overspent by $0.0050") {
			t.Fatalf("said %q", s)
		}
	})
}

// A run within its budget records no overspend.
func TestNoOverspendWithinBudget(t *testing.T) {
	onHosts(t, func(t *testing.T, h host) {
		d := &streamDriver{size: func(*Turn) int64 { return 100 }}
		res, _ := runStreamOn(t, h, "name: bud\nbudget: {tokens: 1000}\n"+agents+"nodes:\n  - {id: t1, agent: worker, prompt: x}\n", d)
		if !res.OK || res.Overspend != nil {
			t.Fatalf("%+v %+v", res.Failure, res.Overspend)
		}
	})
}

// A resume rebuilds each agent's smallest and typical turn from the
// journal, as the run knew them when it stopped.
func TestResumeRebuildsTheLedger(t *testing.T) {
	onHosts(t, func(t *testing.T, h host) {
		sizes := map[string]int64{"a": 300, "b": 100, "c": 200, "d": 700, "j": 50}
		d := &streamDriver{size: func(t *Turn) int64 { return sizes[t.Visit] }}
		_, facts := runStreamOn(t, h, `name: bud
`+agents+`nodes:
  - {id: a, agent: worker, prompt: x}
  - {id: b, agent: worker, prompt: x}
  - {id: c, agent: worker, prompt: x}
  - {id: d, agent: worker, prompt: x}
  - {id: j, agent: judge, prompt: x}
`, d)
		l := ReplayLedger(h.runtime(), facts)
		if s, ty := l.Smallest("worker"), l.Typical("worker"); s != 100 || ty != 300 {
			t.Fatalf("worker: smallest %d typical %d, want 100 and 300", s, ty)
		}
		if s := l.Smallest("judge"); s != 50 {
			t.Fatalf("judge: smallest %d, want 50", s)
		}
		want, floor, priced := l.Price("other")
		if !priced || want != 50 || floor != 50 {
			t.Fatalf("an agent without turns is priced at the run's smallest turn: %+v %+v %v", want, floor, priced)
		}
	})
}
