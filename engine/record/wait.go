package record

import (
	"time"

	"github.com/flowrun/flow/schema"
)

// A wait node's facts (docs/waits.md): a visit that reached its wait
// journals what it waits for and until when; the run may then end
// waiting, and a resume goes on from there.
const (
	// FactWaiting marks a wait visit that waits, in Wait: written once,
	// when the visit first reaches its wait; a resume keeps its Since.
	FactWaiting FactType = "waiting"
	// StatusWaiting is a run that ended with a wait not yet satisfied:
	// it holds no process, and goes on when it is resumed.
	StatusWaiting Status = "waiting"
	// EventVisitWaiting says a visit waits, in Wait.
	EventVisitWaiting EventType = "visit.waiting"
)

// Wait is what a wait visit waits for: an event by name, or a time; and
// since and until when. Until is nil for an event without a timeout.
type Wait struct {
	Event string     `json:"event,omitempty"`
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
}

// What says what the wait is for, as a person reads it: "event deploy"
// or "time".
func (w *Wait) What() string {
	if w.Event != "" {
		return "event " + w.Event
	}
	return "time"
}

// VisitWaiting is the fact of a visit that waits.
type VisitWaiting struct {
	Time  time.Time
	Visit string
	Node  string
	Wait  Wait
}

// Fact is the waiting fact.
func (v VisitWaiting) Fact() *Fact {
	w := v.Wait
	return &Fact{Type: FactWaiting, Time: v.Time, Visit: v.Visit, Node: v.Node, Wait: &w}
}

// Waits are the waits of facts that no end of their visit satisfied
// after them, by visit, in the order they were reached: what a run that
// ended waiting waits on.
func Waits(facts []*Fact) []*Fact {
	open := map[string]*Fact{}
	var order []string
	for _, f := range facts {
		switch {
		case f.Type == FactWaiting && f.Wait != nil:
			if _, ok := open[f.Visit]; !ok {
				order = append(order, f.Visit)
			}
			open[f.Visit] = f
		case f.Type == FactEnd && (f.Error == nil || f.Error.Kind != schema.FailWaiting):
			delete(open, f.Visit)
		}
	}
	var out []*Fact
	for _, v := range order {
		if f, ok := open[v]; ok {
			out = append(out, f)
		}
	}
	return out
}
