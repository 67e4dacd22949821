// Package pi implements the `pi` agent driver (docs/drivers.md): one turn is one run
// of `pi --mode json -p`, the pi coding agent's non-interactive JSON event
// stream.
//
// # Invocation
//
// The turn text goes to pi on stdin, from a regular file (pi reads a
// non-TTY stdin to its end; an argument could be mistaken for an option or
// an @file, and may not exceed 128 KiB). The agent's Markdown body is
// appended to pi's system prompt (--append-system-prompt with a file), its
// model is --model (provider/id), its thinking level --thinking, and its
// tools --tools (absent tools mean the read-only set read,grep,find,ls; an
// empty list means --no-tools). pi runs in the turn's working directory,
// in its own process group (package agentcli runs it through package proc).
//
// With Options.BaseURL the driver writes a private agent directory
// (PI_CODING_AGENT_DIR) for the turn: a models.json with one custom
// provider for the server — the key only by the name of its environment
// variable — and a settings.json that bounds pi's own retries. Without it,
// pi uses the user's configuration as it is.
//
// # Delegation
//
// A turn with a Delegate gets the delegate tool from a pi extension flow
// writes into the turn's scratch directory (delegate.ts, loaded with
// --extension, its name added to --tools): it registers `delegate` with
// the agents as its enum and carries each call to the run's socket with
// Node's own net module, one JSON line each way, as steps/delegate.Call
// does. The socket and the token are in pi's environment, never in the
// file; a refusal or a failed child is thrown, which pi gives the model as
// the tool's error result. No MCP server is involved.
//
// # Outcome
//
// pi exits 0 even when every request failed, so the outcome is read from
// the events: Completed needs a clean exit, a well-formed stream that
// reaches agent_end, no auto_retry_end that gave up, and a last assistant
// message with stopReason "stop" and some text. "length" (the length
// limit), "toolUse" (still requesting tools), "error" (the request failed,
// with pi's message) are Failed with a diagnostic; a cancelled turn is
// Aborted and Turn returns context.Cause. Unknown event types are noted
// once each and otherwise ignored; malformed lines are named by number.
// Stderr is kept whole.
//
// # Usage
//
// By the rule of package usage (docs/drivers.md#usage): every assistant
// message carries usage {input, output, cacheRead, cacheWrite, cost.total}
// and its responseId, repeated in message_update, message_end and
// turn_end; the driver counts each response once, and counts the
// assistant messages as turns. pi's input already excludes the cache. A
// turn without any assistant message reports nothing (null); one that
// ends before agent_end records what it had, partial.
//
// # Memory
//
// Sessions live in <Home>/pi-sessions (--session-dir), so they stay with the
// run directory. The session header's id is returned as the turn's
// Session; a later turn with that Session continues it (--session <id>).
// A pi that starts another session instead fails the turn.
//
// # Transcript
//
// Package transcript keeps it, as for every driver: a header line for the
// turn, then pi's raw stream line by line as it arrives (so `flow tail`
// follows a running turn), then a summary, in <Home>/<agent>.jsonl; and
// <Home>/<agent>.html, a self-contained page of every turn so far (all text
// escaped), rebuilt after each. The steps on the page — text, thinking,
// tool calls and results, retries — are read from the stream by the same
// parser that decides the outcome. Neither file holds the environment, and
// the value of APIKeyEnv is redacted from both. A turn without a home
// keeps no transcript.
//
// A Driver holds only settings: it is immutable and safe for concurrent
// use.
package pi
