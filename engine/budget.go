package engine

import (
	"context"

	"github.com/flowrun/flow/engine/ledger"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// newLedger is a run's ledger (package engine/ledger), its locks the
// host's.
func newLedger(rt Runtime) *ledger.Ledger {
	return ledger.New(rt.NewMutex(), func() ledger.Locker { return rt.NewLock() })
}

// withBudget returns fr with a meter for b appended, or fr if b is nil.
func (f *frame) withBudget(b *flows.Budget, where string) *frame {
	if b == nil || (b.Tokens == 0 && b.Cost == 0) {
		return f
	}
	cp := *f
	cp.meters = append(append([]*ledger.Meter{}, f.meters...), ledger.NewMeter(f.rt.NewLock(), b, where))
	return &cp
}

// book reserves what a turn of agent at visit is expected to spend under
// every budget above it (ledger.Book). A refusal is a `budget` failure.
func (r *runner) book(ctx context.Context, fr *frame, agent, visit string) (*ledger.Booking, *record.Failure) {
	b, why, err := r.ledger.Book(ctx, fr.meters, agent, visit, r.blind, func() bool { return r.isChild(visit) })
	switch {
	case err != nil:
		return nil, cancelled(ctx, visit)
	case why != "":
		return nil, &record.Failure{Kind: schema.FailBudget, Message: why}
	}
	return b, nil
}
