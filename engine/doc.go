// Package engine runs a compiled flows.Plan: sequences, choices, parallel
// branches, maps and loops, flow calls and asks; visits, memory scopes,
// timeouts, retries, budgets and the run-wide cap on live subagents. It
// records everything through the rundir package, which owns the run
// directory's format.
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
