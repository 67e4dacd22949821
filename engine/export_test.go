package engine

import (
	"github.com/flowrun/flow/engine/delegation"
	"github.com/flowrun/flow/engine/ledger"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/replay"
)

// This file hands the tests of package engine_test what they look into.
// They walk on the hosts (engine/local imports engine, so its tests
// cannot be in package engine) and read a few of the walker's own parts.

// JSONFence is jsonFence.
var JSONFence = jsonFence

// ReplayedLedger is the budget ledger a resume rebuilds from a journal.
type ReplayedLedger struct{ l *ledger.Ledger }

// ReplayLedger replays facts as a resume does, on rt, and returns its
// ledger.
func ReplayLedger(rt Runtime, facts []*record.Fact) ReplayedLedger {
	r := &runner{rt: rt, mu: rt.NewLock(), sessions: map[record.Scope]*session{}, ledger: newLedger(rt), children: delegation.NewRegistry(rt.NewLock())}
	r.wt, r.journal = r.newScopes(), replay.NewJournal(facts, rt.NewLock())
	r.replay(facts)
	return ReplayedLedger{r.ledger}
}

// Smallest is the agent's smallest turn in tokens.
func (r ReplayedLedger) Smallest(agent string) int64 { return r.l.Smallest(agent) }

// Typical is the agent's typical turn in tokens.
func (r ReplayedLedger) Typical(agent string) int64 { return r.l.Typical(agent) }

// Price is what the ledger reserves for the agent's next turn and the
// least it needs, in tokens, and whether it could price it.
func (r ReplayedLedger) Price(agent string) (want, floor int64, priced bool) {
	return r.l.TokenPrice(agent)
}
