package reuse

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/delegate"
)

// delegateAgain repeats, before a recorded answer of a turn that may
// delegate is returned, each delegate call the recorded visit made, in the
// order it made them, through the turn's own delegation (docs/delegation.md):
// the walker runs each child as a visit of this run, its turn answered from
// the recording by its key in turn (or live, under --reuse, when it
// misses), so the run's journal holds the same tree and flow test
// exercises it. A call that cannot be carried, or a child the recording
// saw succeed that has no answer now, fails the turn naming its visit.
//
// The recorded answer stands only with the answers its turn read: changed
// names the first child whose answer now is not the one recorded (it ran
// live and said otherwise, or a walk of flow plan stands in for it), and
// then the recorded answer must not be taken. Every call is made even so:
// a live turn after it asks them again and is answered by those children.
func delegateAgain(ctx context.Context, h hit, t *engine.Turn) (changed string, err error) {
	if t.Delegate == nil {
		return "", nil
	}
	for _, c := range h.rec.kids[h.fact.Visit] {
		reply, err := delegate.Call(ctx, t.Delegate.Socket, t.Delegate.Token, c.agent, c.task)
		if err != nil {
			return "", unavailable("%s: repeating its recorded delegate call to %s (%s): %w", t.Visit, c.agent, c.path, err)
		}
		if reply.Error != "" && c.ok {
			return "", unavailable("%s: its recorded delegate call to %s (%s) has no answer now: %s", t.Visit, c.agent, c.path, reply.Error)
		}
		if changed == "" {
			changed = childChanged(c, reply)
		}
	}
	return changed, nil
}

// childChanged says how the answer of recorded child c differs now, or "".
// An answer too long for a reply is compared by its first part, which is
// what the parent's turn read (the rest names a file of its run).
func childChanged(c child, reply engine.DelegateReply) string {
	switch {
	case !c.ok && reply.Error != "":
		return "" // it failed then and fails now: the parent read a failure both times
	case !c.ok:
		return fmt.Sprintf("its child %s succeeds now; it failed when recorded", c.path)
	}
	if _, ok := reads(reply.Answer); ok {
		return fmt.Sprintf("its child %s runs again", c.path)
	}
	if reply.Answer == c.answer || strings.HasPrefix(reply.Answer, c.answer+"\n\n[the answer goes on: ") {
		return ""
	}
	return fmt.Sprintf("its child %s answers otherwise than when recorded", c.path)
}

// restart tells the walker that t runs live after its recorded calls were
// repeated: its calls are answered by the children already run.
func restart(t *engine.Turn) {
	if t.Delegate != nil && t.Delegate.Restart != nil {
		t.Delegate.Restart()
	}
}
