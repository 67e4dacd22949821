// Package agentcli runs the agent CLIs behind the process-backed drivers
// (pi, claude, codex) the way all of them need: one process per turn, in
// its own process group through package proc, with the turn text on stdin
// and the stdout stream read line by line as it arrives, into the turn's
// transcript and the driver's own parser.
//
// What differs between the CLIs stays in their drivers: the command line,
// the event vocabulary and what decides a turn's outcome. This package
// holds only what they mean in the same way:
//
//   - Turn: a whole turn of a CLI whose event stream decides the outcome
//     (pi, claude), given the driver's command line and its Stream parser:
//     the transcript (package transcript), the run, and how the exit, a
//     cancel or another session overrule the stream.
//   - Run: start, feed stdout lines, wait; an Exit says how the process
//     ended (Problem, Settle). Codex, whose outcome weighs the exit
//     differently, runs through it directly.
//   - LineWriter: stdout as complete, numbered lines.
//   - Environ and Lookup: the child's environment from the flow process's.
//   - Notes and Activity: the ordered diagnostics and the progress line of
//     a JSON event stream (pi and claude; codex words its own).
//   - MaxRetries: the CLIs' own retries as their specs read them from the
//     configuration, bounded to DefaultMaxRetries unless it says otherwise.
//
// # Sharing
//
// Run is safe for concurrent use. A LineWriter, Notes and Activity belong
// to one turn's stream and are used by one goroutine at a time: the one
// os/exec copies stdout in while the CLI runs, then the driver's after Run
// returns (Wait orders the two).
package agentcli
