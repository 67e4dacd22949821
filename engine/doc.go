// Package engine runs a compiled flows.Plan: sequences, choices, parallel
// branches, maps and loops, flow calls and asks; visits, memory scopes,
// timeouts, retries, budgets and the run-wide cap on live subagents. Every
// effect of a walk goes through its Host (host.go): the clock, groups,
// locks, leaves, the record, the redactor and the working copies. The
// local host (package engine/local) records into the rundir package,
// which owns the run directory's format; a Temporal workflow is another
// host (docs/decisions.md, "A pure walker").
//
// Every task of a walk is its host's: each block runs its children in a
// Group of the host's Runtime that it waits for, and cancellation travels
// by context with a cause (ErrStopped, a fail_fast sibling, a timeout, a
// budget), so each visit can say why it ended. Leaf work is done by the
// host's LeafRunner; locally, the Driver and Commander implementations
// that cmd registers, which must end their processes when ctx is done,
// and the local host ends whatever a run's steps left running before a
// run returns.
//
// A run's journal is the source of truth: every visit's start and end is a
// line in the journal before the next visit starts, with the end carrying
// the whole output of a leaf, so a resume can rebuild any ended visit
// without running it.
package engine
