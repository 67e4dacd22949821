// Package gate is `flow gate` (docs/gate.md): a statistical gate for CI
// that says, per task, PASS, FAIL or INCONCLUSIVE, and spends trials only
// where the verdict is still open.
//
// The statistics are a sequential probability ratio test per task (Test,
// in sprt.go): the rate the task must reach against that rate less a
// margin, with Ville's bounds, so that the chance of a wrong verdict at
// either rate is at most alpha however many rounds are looked at. The
// trials are the cells of an ordinary sweep (package sweep) of one
// assignment that grows by one cell per undecided task after every round
// (Sweep.AddTrials), so a trial is an ordinary run with the sweep's
// budget, re-runs after infrastructure failures, and reports; runs start
// only in startTrials, through Sweep.Run and its runner.Backend.
//
// Lifecycle: build a Gate (the candidate's sweep, its plan and run
// options, the Rule, and a Baseline in baseline mode), call Run once; the
// Result renders as JUnit, JSON and Markdown (output.go). A Gate is used
// by one goroutine.
package gate
