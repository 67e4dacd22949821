package engine

import (
	"context"
	"strings"

	"github.com/flowrun/flow/engine/delegation"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

// staysInfra says whether a delegated child's recorded failure stays on
// resume: one on the infrastructure never does, the child runs again.
func staysInfra(n *flows.Node, fail *record.Failure) bool {
	return !strings.HasPrefix(n.ID, delegation.NodePrefix) || !delegation.Infrastructure(fail)
}

// turnOf runs one turn (turn); a delegating turn whose child failed on
// the infrastructure while it ran fails as the child did.
func (r *runner) turnOf(ctx context.Context, fr *frame, t *Turn, o *outcome, sess *session) (reply, *record.Failure) {
	if o.deleg == nil {
		return r.turn(ctx, fr, t, o, sess)
	}
	_ = r.infra.Take(t.Visit) // a note left from an earlier turn is stale
	answer, fail := r.turn(ctx, fr, t, o, sess)
	if infra := r.infra.Take(t.Visit); infra != nil && fail == nil {
		return reply{}, infra
	}
	return answer, fail
}
