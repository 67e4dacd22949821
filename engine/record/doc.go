// Package record is the walker's vocabulary: what a walk records and
// hands on, on every host — facts (the journal's lines), failures and
// their kinds, usage, events, run statuses, the record of an isolated
// scope's working copy, an ask's answer, a reused visit's origin and a
// budget's overspend. It holds the types and their pure methods only:
// storing them (the run directory, a workflow's state) is a host's
// business (docs/decisions.md, "A pure walker").
//
// It is a package of its own below engine, not files of package engine,
// so that the run directory can name it while the local host's code still
// in package engine imports the run directory; package engine names every
// type here under the same name (engine.Fact, engine.Failure, …).
package record
