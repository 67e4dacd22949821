package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine/delegation"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// infraTree notes the delegated children that failed on the
// infrastructure (docs/delegation.md): refused for now by their provider
// (`rate_limit`), unable to start (`unavailable`), or killed by a signal
// flow did not send. Such a failure says nothing of the task: the parent's
// turn that read it does not keep its answer — its visit fails as the
// child did, so that a sweep runs its cell again rather than score it,
// and `flow resume` runs the child and the parent's turn again — and the
// run says infra_in_tree.
type infraTree struct {
	mu       Locker
	byParent map[string]*record.Failure // the first such failure of each parent's running turn
	any      bool                       // some child of the run failed so
}

func newInfraTree(mu Locker) *infraTree {
	return &infraTree{mu: mu, byParent: map[string]*record.Failure{}}
}

// infrastructure says whether a visit's failure is the infrastructure's
// rather than its agent's (the kinds a sweep runs again, docs/sweeps.md).
func infrastructure(f *record.Failure) bool {
	if f == nil {
		return false
	}
	switch f.Kind {
	case schema.FailRateLimit, schema.FailUnavailable:
		return true
	case schema.FailProvider:
		return strings.Contains(f.Message, "exited with status 137") || strings.Contains(f.Message, "was killed by signal 9")
	}
	return false
}

// note records that the child at path of parent failed with fail, if on
// the infrastructure.
func (t *infraTree) note(parent, path string, fail *record.Failure) {
	if !infrastructure(fail) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.any = true
	if t.byParent[parent] == nil {
		t.byParent[parent] = &record.Failure{Kind: fail.Kind, Message: fmt.Sprintf(
			"%s (its delegated child %s failed so: the answer that read it is not kept; resume the run to run both again)", fail.Message, path)}
	}
}

// take returns and forgets the failure noted for parent's turn: called
// before a turn starts (nothing stale) and after it ends.
func (t *infraTree) take(parent string) *record.Failure {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.byParent[parent]
	delete(t.byParent, parent)
	return f
}

func (t *infraTree) inTree() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.any
}

// staysInfra says whether a delegated child's recorded failure stays on
// resume: one on the infrastructure never does, the child runs again.
func staysInfra(n *flows.Node, fail *record.Failure) bool {
	return !strings.HasPrefix(n.ID, delegation.NodePrefix) || !infrastructure(fail)
}

// turnOf runs one turn (turn); a delegating turn whose child failed on
// the infrastructure while it ran fails as the child did.
func (r *runner) turnOf(ctx context.Context, fr *frame, t *Turn, o *outcome, sess *session) (reply, *record.Failure) {
	if o.deleg == nil {
		return r.turn(ctx, fr, t, o, sess)
	}
	r.infra.take(t.Visit)
	answer, fail := r.turn(ctx, fr, t, o, sess)
	if infra := r.infra.take(t.Visit); infra != nil && fail == nil {
		return reply{}, infra
	}
	return answer, fail
}
