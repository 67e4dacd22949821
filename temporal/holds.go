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
// and the waits among them. Containers are left out: they hold only
// through their children.
type holds struct {
	open  map[string]bool         // leaf visit → it waits
	waits map[string]*record.Wait // the waits of open visits
}

func newHolds(facts []*record.Fact) *holds {
	h := &holds{open: map[string]bool{}, waits: map[string]*record.Wait{}}
	for _, f := range facts {
		h.add(f)
	}
	return h
}

// add takes the next fact of the run.
func (h *holds) add(f *record.Fact) {
	switch f.Type {
	case record.FactStart:
		switch f.Kind {
		case schema.KindAgent, schema.KindRun, schema.KindAsk, schema.KindWait:
			h.open[f.Visit] = false
		}
	case record.FactWaiting:
		if _, ok := h.open[f.Visit]; ok && f.Wait != nil {
			h.open[f.Visit] = true
			h.waits[f.Visit] = f.Wait
		}
	case record.FactEnd:
		delete(h.open, f.Visit)
		delete(h.waits, f.Visit)
	case record.FactRun:
		if f.Status == record.StatusRunning { // an attempt starts afresh
			clear(h.open)
			clear(h.waits)
		}
	}
}

// onlyWaits says the run holds at least one wait and nothing else.
func (h *holds) onlyWaits() bool {
	if len(h.waits) == 0 {
		return false
	}
	for _, waits := range h.open {
		if !waits {
			return false
		}
	}
	return true
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
	for _, w := range m.holds.waits {
		if _, ok := kept[w.Event]; w.Event != "" && ok || w.Until != nil && !now.Before(*w.Until) {
			return false
		}
	}
	return true
}
