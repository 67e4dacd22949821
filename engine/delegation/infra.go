package delegation

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// Infra notes the delegated children that failed on the infrastructure
// (docs/delegation.md): refused for now by their provider (`rate_limit`),
// unable to start (`unavailable`), or killed by a signal flow did not
// send. Such a failure says nothing of the task: the parent's turn that
// read it does not keep its answer — its visit fails as the child did, so
// that a sweep runs its cell again rather than score it, and `flow resume`
// runs the child and the parent's turn again — and the run says
// infra_in_tree.
type Infra struct {
	mu       Locker
	byParent map[string]*record.Failure // the first such failure of each parent's running turn
	any      bool                       // some child of the run failed so
}

// NewInfra returns an empty Infra guarded by mu.
func NewInfra(mu Locker) *Infra {
	return &Infra{mu: mu, byParent: map[string]*record.Failure{}}
}

// Infrastructure says whether a visit's failure is the infrastructure's
// rather than its agent's (the kinds a sweep runs again, docs/sweeps.md).
func Infrastructure(f *record.Failure) bool {
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

// Note records that the child at path of parent failed with fail, if on
// the infrastructure.
func (t *Infra) Note(parent, path string, fail *record.Failure) {
	if !Infrastructure(fail) {
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

// Take returns and forgets the failure noted for parent's turn: called
// before a turn starts (nothing stale) and after it ends.
func (t *Infra) Take(parent string) *record.Failure {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.byParent[parent]
	delete(t.byParent, parent)
	return f
}

// InTree says whether some child of the run failed on the infrastructure.
func (t *Infra) InTree() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.any
}
