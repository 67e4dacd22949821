// Package serve is `flow serve` (docs/serve.md): it loads every flow of a
// directory, fires their schedules, runs them under a server-wide cap
// through a runner.Backend into ordinary run directories, and serves a status
// page, a JSON API, server-sent events and Prometheus metrics over them.
//
// A Server is made by New and runs from Run to the end of Run's context;
// it is not reused. Run takes the directory's lock (DIR/.flow/serve.lock)
// so that one server serves a directory, resumes the runs a previous
// server left unended, fires schedules, and on cancellation stops firing,
// stops every run as Ctrl-C would (resumable) and waits for them.
//
// What the server decided — runs it started, fires it skipped, runs it
// stopped on shutdown — is appended to DIR/.flow/serve.jsonl (state.go):
// the next server reads it to resume and to catch up.
//
// Everything a run does goes through the engine and the run directory, so
// `flow runs`, `flow show` and `flow tail` read served runs as any other.
// A run keeps the plan it started with: a reloaded file changes the next
// run, never a running one.
package serve
