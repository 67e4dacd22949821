package schema

// FailKind names why a visit failed. The set is closed (docs/flow-files.md, Failures): guards
// compare against these strings, so adding one is a language change.
type FailKind string

// The failure kinds.
const (
	FailProvider    FailKind = "provider"    // the agent or its model server failed
	FailRateLimit   FailKind = "rate_limit"  // the provider refused for now (429, overload) or its quota ran out
	FailTimeout     FailKind = "timeout"     // the visit outlived its timeout
	FailSchema      FailKind = "schema"      // a typed answer did not fit its schema, twice
	FailStopped     FailKind = "stopped"     // the run was interrupted (Ctrl-C, SIGTERM)
	FailCancelled   FailKind = "cancelled"   // a fail_fast sibling failed first
	FailChild       FailKind = "child"       // a visit below this one failed
	FailUnconverged FailKind = "unconverged" // a loop reached max before until held
	FailCondition   FailKind = "condition"   // a guard or template could not be evaluated
	FailTooMany     FailKind = "too-many"    // a map's list was longer than max
	FailUnavailable FailKind = "unavailable" // a command or driver could not be started
	FailBudget      FailKind = "budget"      // the token or cost budget ran out
	FailRefused     FailKind = "refused"     // the run refused to start the visit (e.g. ask unattended)
	FailConflict    FailKind = "conflict"    // an isolated scope's changes could not land (docs/worktrees.md)
	// FailWaiting is a wait whose time or event has not come: the run ends
	// waiting, and goes on when it is resumed (docs/waits.md).
	FailWaiting FailKind = "waiting"
)

// QuotaPrefix starts the message of a `rate_limit` failure whose cause will
// not pass within the run (a daily or billing quota, as the provider says):
// a sweep does not run such a cell again (docs/sweeps.md).
const QuotaPrefix = "quota exhausted: "

// FailKinds lists every kind in SPEC order, for docs, schemas and checks.
var FailKinds = []FailKind{
	FailProvider, FailRateLimit, FailTimeout, FailSchema, FailStopped, FailCancelled, FailChild,
	FailUnconverged, FailCondition, FailTooMany, FailUnavailable, FailBudget, FailRefused,
	FailConflict, FailWaiting,
}

// Resumable reports whether a run that failed with this kind may be resumed.
// Failures the flow decided itself are final (docs/resume-and-budgets.md). A conflict is not one
// of them: it depends on the repository, which the user may change (resolve
// the kept branch), and a resume tries to land the scope again without
// running its visits again.
func (k FailKind) Resumable() bool {
	switch k {
	case FailUnconverged, FailCondition, FailTooMany, FailBudget:
		return false
	}
	return true
}
