// Package claude implements the `claude` agent driver (docs/drivers.md): one turn is
// one run of `claude -p --output-format stream-json --verbose`, Claude
// Code's non-interactive event stream.
//
// # Invocation
//
// --include-partial-messages adds the API's own stream events (see Usage).
// The turn text goes to Claude Code on stdin, from a regular file (one
// argument may not exceed 128 KiB, and an open pipe would never end). The
// agent's Markdown body is appended to the system prompt
// (--append-system-prompt-file), its model is --model, its thinking level
// --effort, and its tools are both the only tools that exist (--tools) and
// pre-approved (--allowedTools) under --permission-mode dontAsk: anything
// else is denied, never waited for. Absent tools mean Read, Grep, Glob; pi's
// lower-case names are mapped (read→Read, find/ls→Glob, bash→Bash, …). A
// typed output passes its JSON Schema as --json-schema: Claude Code then
// gives the model a StructuredOutput tool and the result event carries
// structured_output, which becomes the answer.
//
// The environment bounds Claude Code's own retries (CLAUDE_CODE_MAX_RETRIES
// from Options.MaxRetries) and turns off telemetry, error reporting, the
// auto-updater and other non-essential traffic. With Options.BaseURL the
// driver sets ANTHROPIC_BASE_URL (the turn's meter, see Usage) and a private CLAUDE_CONFIG_DIR in the
// memory scope's home; the key is passed in the environment only.
//
// # Delegation
//
// A turn with a Delegate gets flow's delegate MCP server: an --mcp-config
// file in the turn's scratch directory (it holds the turn's token, so it
// never lands in the home) starts Delegation.Server with --agent flags and
// the socket and token in its environment (package mcpserver),
// --strict-mcp-config keeps every other MCP server out, and the tool,
// mcp__flow__delegate, is added to --allowedTools so it runs without
// asking. --tools names built-in tools only, so it does not hide it.
// MCP_CONNECTION_NONBLOCKING=0 makes Claude Code wait for the server
// before its first request (in -p mode it does not by default, and a
// server slow to start left the first request without the tool).
//
// # Outcome
//
// Read from the result event, not the exit status: its subtype can say
// success while is_error is true. Completed needs a result with is_error
// false, subtype success, a normal stop reason and some text (or a
// structured output), on a well-formed stream and a clean exit. A missing
// result (truncated), max_tokens (the length limit; Claude Code itself turns
// it into an API error after retrying), tool_use without a structured
// output (still requesting tools) and every error subtype are Failed with a
// diagnostic; retries Claude Code made (system/api_retry) and tools it was
// denied are noted. A cancelled turn is Aborted and Turn returns
// context.Cause. Stderr is kept whole.
//
// # Usage
//
// By the rule of package usage (docs/drivers.md#usage). Claude Code sends
// one assistant event per content block, each with its message's id and
// the usage of the message's start; the API's message_start and
// message_delta stream events (--include-partial-messages) give its usage
// at the start and at the end, with the output tokens. Each figure of a
// message is the largest reported of it; the ledger counts each message
// once, and that sum is the live count.
//
// With Options.BaseURL, Claude Code talks to the server through the
// turn's meter (package meter), whose reports of each message, read
// before Claude Code reads them, go to the same ledger under the message's
// id: a tool call never runs before its message is counted whole. The
// meter asks Turn.Affords before each request, and one it says no to is
// refused before it reaches the server: the turn fails engine.ErrBudget. The result's usage, total_cost_usd and
// num_turns are the turn's final figure. A turn that ends without a result
// (stopped, killed, cut off) records the sum of its messages, partial.
//
// # Memory
//
// The session id (from the init or result event) is the turn's Session; a
// later turn with that Session runs with --resume. Claude Code keeps its
// sessions in its configuration directory, so with BaseURL they live in the
// scope's home beside the transcript.
//
// # Processes
//
// Claude Code runs tool shell commands in process groups of their own;
// package proc finds them by their environment tag, so a cancelled turn
// ends them too.
//
// # Transcript
//
// Package transcript keeps it, as for every driver: a header line for the
// turn, then Claude Code's raw stream line by line as it arrives (so `flow tail`
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
package claude
