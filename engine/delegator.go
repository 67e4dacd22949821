package engine

import (
	"context"
	"fmt"

	"github.com/flowrun/flow/flows"
)

// Delegator is the host's side of delegation (docs/delegation.md): it
// carries one turn's delegate calls from wherever the turn's process makes
// them to the walker, which decides each. The local host serves them on a
// Unix socket in the run directory (package engine/local); the in-memory
// host hands them to its scripted leaves.
type Delegator interface {
	// Serve opens the delegation of one turn at visit and returns what its
	// driver gets (Socket, Token and Server; the walker fills in Agents),
	// and close. handle is called once for each call, from many goroutines
	// at once, with a ctx that ends when the call is withdrawn or the turn
	// ends; its reply is the call's. close refuses calls from then on,
	// ends the calls in flight (their ctx) and returns once every handle
	// has returned. ctx is the turn's: its end ends the delegation too.
	Serve(ctx context.Context, visit string, handle DelegateHandler) (d *Delegation, close func(), err error)
}

// DelegateHandler decides one delegate call of a turn.
type DelegateHandler func(ctx context.Context, req DelegateRequest) DelegateReply

// RefuseDelegation is the refusal of plan on a host that cannot serve
// delegate calls (a local run without local.Config.Delegates):
// nil when no node of it delegates.
func RefuseDelegation(plan *flows.Plan) error {
	n := firstNode(plan, func(n *flows.Node) bool { an := n.AsAgent(); return an != nil && an.Delegate != nil })
	if n == nil {
		return nil
	}
	return &RefusedError{Msg: fmt.Sprintf("%s: node %q delegates, and this host serves no delegate calls (docs/delegation.md)", n.Pos, n.ID)}
}
