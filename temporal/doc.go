// Package temporal runs flows on Temporal (docs/temporal.md):
// the run is a workflow that walks the same compiled plan with the
// engine's own walker, and its leaves — agent turns and commands — are
// activities on workers anywhere. It is an option behind the engine's
// seams, not a second interpreter:
//
//   - runtime is the engine.Runtime of a workflow: coroutines, timers,
//     the workflow clock, its mutexes and semaphores; the walk's
//     context.Context carries the workflow.Context and is only cancelled
//     from workflow code, so the walk stays deterministic.
//   - leaves is the engine.LeafRunner of a workflow: each leaf an
//     activity; a memory scope's later turns go to the own task queue of
//     the worker that holds its session.
//   - recorder is the engine.Recorder of a workflow: facts in workflow
//     state, read by the facts query.
//   - Activities run leaves on a worker through local.Leaves, with
//     heartbeats that carry progress and deliver cancellation.
//   - Worker polls the shared task queue and its own.
//   - Client starts a run and mirrors its facts into a local run
//     directory, so that flow show, runs, tail and the reports work; Attach
//     continues a mirror whose process died. The mirror relays an attended
//     run's asks to a local Asker and signals the answers back.
//   - DataConverter seals every payload with the run's Key (AES-GCM) for
//     the workflow it belongs to, so that history holds no flow data in
//     clear and no payload moves between runs; with a key it refuses
//     unsealed payloads, and in workflow code a payload sealed with a key
//     the worker lacks fails the task, not the run (untilOpened schedules
//     such an activity again). The mirror notes what holds a run up
//     (trouble.go). Workers redact what they write and return.
//   - versions.go says how the walk's commands are versioned
//     (workflow.GetVersion); testdata/histories holds each version's
//     recorded histories, which the tests replay.
//
// Nothing here is needed to run a flow locally, and the Temporal server is
// never compiled into flow: tests use the CLI's dev server
// (internal/devserver).
package temporal
