package temporal

import (
	"context"
	"fmt"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// ErrLetGoWaiting ends a mirror whose run holds nothing but waits, for a
// follower that lets go of such runs (Client.LetGoWhileWaiting): the run
// goes on on Temporal when its time or event comes, and the follower
// re-attaches then (flow serve --temporal, docs/waits.md, On Temporal).
var ErrLetGoWaiting = fmt.Errorf("%w while it waits", ErrDetached)

// holds is what a run holds now, from its facts as they are mirrored: the
// leaf visits (agent, run, ask, wait) that started and have not ended,
// each with its wait, nil while it does not wait. Containers are left
// out: they hold only through their children.
type holds map[string]*record.Wait

func newHolds(facts []*record.Fact) holds {
	h := holds{}
	for _, f := range facts {
		h.add(f)
	}
	return h
}

// add takes the next fact of the run.
func (h holds) add(f *record.Fact) {
	switch f.Type {
	case record.FactStart:
		switch f.Kind {
		case schema.KindAgent, schema.KindRun, schema.KindAsk, schema.KindWait:
			h[f.Visit] = nil
		}
	case record.FactWaiting:
		if _, ok := h[f.Visit]; ok && f.Wait != nil {
			h[f.Visit] = f.Wait
		}
	case record.FactEnd:
		delete(h, f.Visit)
	case record.FactRun:
		if f.Status == record.StatusRunning { // an attempt starts afresh
			clear(h)
		}
	}
}

// onlyWaits says the run holds at least one wait and nothing else.
func (h holds) onlyWaits() bool {
	for _, w := range h {
		if w == nil {
			return false
		}
	}
	return len(h) > 0
}

// mayLetGo says the run can go on only when a wait's time or event comes:
// its facts say it holds nothing but waits, none of whose events it kept
// and none of whose times came, and Temporal says its workflow has
// nothing to do meanwhile (no task, activity or child pending). The facts
// are read afresh first, so that an ask that began is seen.
func (m *mirror) mayLetGo(ctx context.Context, now time.Time) bool {
	if !m.holds.onlyWaits() {
		return false
	}
	desc, err := m.c.Client.DescribeWorkflowExecution(ctx, m.ref.Workflow, m.ref.Execution)
	if err != nil || desc.GetPendingWorkflowTask() != nil || len(desc.GetPendingActivities()) > 0 || len(desc.GetPendingChildren()) > 0 {
		return false
	}
	if m.pull(ctx) != nil || !m.holds.onlyWaits() {
		return false
	}
	kept, err := m.c.queryKept(ctx, m.ref.Workflow)
	if err != nil {
		return false
	}
	for _, w := range m.holds {
		if _, ok := kept[w.Event]; w.Event != "" && ok || w.Until != nil && !now.Before(*w.Until) {
			return false
		}
	}
	return true
}
