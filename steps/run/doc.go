// Package run implements the `run:` node: engine.Commander for commands and
// scripts (docs/flow-files.md, Node kinds).
//
// An argv runs directly, without a shell; a script runs with `bash -c`, as in
// GitHub Actions. Both stdout and stderr go to one file, <Home>/output.log,
// through a single file descriptor, so the log holds the whole output
// interleaved in the order it was written; the node's report is the last
// 8000 bytes of that file, trimmed at the start so no UTF-8 sequence is cut.
// Writing straight to a file (no pipe) costs no copying goroutine, and a
// background process that keeps the descriptor open cannot delay the end of
// the step.
//
// A non-zero exit is a value (passed false), not an error. A program that
// cannot be started is an error wrapping engine.ErrUnavailable. On
// cancellation the process tree is ended through package proc and Run
// returns context.Cause of the context. Background processes a step leaves
// behind live until the run ends and the command line calls
// proc.KillTagged.
//
// A Commander holds only settings: it is immutable and safe for concurrent
// use by many visits.
package run
