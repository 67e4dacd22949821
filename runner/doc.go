// Package runner is the one run lifecycle (docs/architecture.md): a
// Backend starts a run, resumes one, attaches to one walked elsewhere and
// stops one, in this process (Local) or on Temporal's workers (Temporal).
// flow run, flow resume, flow sweep and flow serve go through it and
// through nothing else, so that what a run is — the input checked, the
// run directory made and locked, the snapshot, the journal, how it ends —
// does not depend on who started it or where it is walked.
package runner
