// Package exec implements the `exec` agent driver (docs/drivers.md): any program
// answers a turn.
//
// The agent's `command:` argv runs once per turn, in the turn's working
// directory, with the whole turn text on stdin; its stdout is the answer
// (trailing newlines removed, as shell command substitution does). An argv[0]
// that starts with "./" or "../" is relative to the directory of the agent's
// file, so an agent can ship its script beside it.
//
// The program's environment is the flow process's, plus:
//
//	FLOW_MODEL          the resolved model ("" means the program's default)
//	FLOW_VISIT          the visit path, e.g. review#2/verdict
//	FLOW_RUN            the run id
//	FLOW_OUTPUT_SCHEMA  the JSON Schema of the node's typed output (only when it has one)
//
// # Outcome
//
// A clean exit with a non-blank stdout is Completed. A non-zero exit or a
// death by signal is Failed with a diagnostic (the engine maps it to the
// failure kind `provider`), and so is a clean exit with a blank stdout: a
// completed turn needs an answer with text. Of stderr, the last
// transcript.StderrLimit bytes are kept. A program that cannot be started
// is an error wrapping engine.ErrUnavailable. On cancellation the process
// tree is ended through package proc, and Turn returns an Aborted result
// together with context.Cause of the context.
//
// The answer is complete when stdout closes. A program that has closed its
// stdout but is still running Options.Linger (default proc.DefaultLinger,
// 3 s) later is ended — progress says "answer received, <program> did not
// exit; ending it" — and the turn is Completed with the answer and a
// diagnostic "answer received, process did not exit" (Failed "no answer"
// when stdout was blank), instead of waiting out the turn's timeout.
//
// # Long answers
//
// Stdout goes into a transcript.Answer: at most engine.AnswerLimit bytes
// are held, and a longer answer is streamed into <Home>/<agent>-answer.md
// and stored there once (TurnResult.File). The live log then says where it
// is instead of taking the rest of stdout.
//
// # Usage
//
// The driver measures wall_ms and counts one turn; tokens and cost are not
// reported (null) unless the program reports them itself, on lines of its
// stderr such as
//
//	FLOW_USAGE {"id":"msg_1","input":N,"output":M,"cost":C}
//
// read as they are printed (a budget watch sees them while the program
// runs). Any of input (without the cache), output, cache_read,
// cache_write (tokens), cost (USD) and turns may appear; a field left out
// stays not reported. A report with an id is that call's usage, and a
// later report of the same id replaces it; one without an id is the
// program's total so far, and a later one replaces it; the turn's usage is
// their sum (package usage, docs/drivers.md#usage). A program flow stopped
// records what it had reported, partial. This lets test doubles, scripted
// agents and programs that call a model report usage. A malformed
// FLOW_USAGE line, or one with a figure that is not a whole number from 0
// to usage.MaxFigure, is ignored with a diagnostic, and the turn's usage
// is unknown: budgets count the turn as what it reserved, never less.
//
// # Transcript
//
// Every turn appends one JSON line to <Home>/<agent name>.jsonl:
// {"visit","model","prompt","answer","answer_file","exit","wall_ms"}; the
// result's Transcript is that path. The environment is never written
// there, and everything written into the home passes the turn's Secrets.
//
// A Driver holds only settings: it is immutable and safe for concurrent use.
// It keeps no session: with `memory:` every turn still starts the program
// afresh.
package exec
