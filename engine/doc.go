// Package engine runs a compiled flows.Plan: sequences, choices, parallel
// branches, maps and loops, flow calls and asks; visits, memory scopes,
// timeouts, retries, budgets and the run-wide cap on live subagents. Every
// effect of a walk goes through its Host (host.go): the clock, groups,
// locks, leaves, the record, the redactor and the working copies; the
// local host records into the rundir package, which owns the run
// directory's format, and a Temporal workflow is another host. The local
// host's code still in this package is in local_run.go and
// local_leaves.go (docs/decisions.md, "A pure walker").
//
// The engine owns every goroutine it starts: each block runs its children in
// a conc pool that it waits for, and cancellation travels by context with a
// cause (ErrStopped, a fail_fast sibling, a timeout, a budget), so each visit
// can say why it ended. Leaf work is done by the Driver and Commander
// implementations that cmd registers; they must end their processes when ctx
// is done, and Execute and Resume end whatever a run's steps left running
// before they return.
//
// A run's journal is the source of truth: every visit's start and end is a
// line in the journal before the next visit starts, with the end carrying
// the whole output of a leaf, so Resume can rebuild any ended visit without
// running it.
package engine
