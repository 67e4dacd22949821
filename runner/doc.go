// Package runner is flow's composition root and its one run lifecycle
// (docs/architecture.md). New builds, once per process, what every run
// shares — the drivers (and the rate limiters they share), the command
// runner, the secrets learned from the configuration and the environment,
// preflight, tracing — and hands out the backends every entry point gets
// its runs from: Runner.Local (with reuse, a cassette or a dry walk),
// Runner.OnTemporal and Runner.Worker. A Backend starts a run, resumes
// one, attaches to one walked elsewhere and stops one, in this process or
// on Temporal's workers, so that what a run is — the input checked, the
// run directory made and locked, the snapshot, the journal, what it
// redacts, how it ends — does not depend on who started it or where it
// is walked.
package runner
