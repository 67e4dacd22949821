// Package codex implements the `codex` agent driver (docs/drivers.md): one turn is
// one run of `codex exec --json` (OpenAI Codex CLI), and a memory scope
// continues one Codex thread with `codex exec resume <thread>`.
//
// # Invocation
//
// The driver runs, in the turn's working directory,
//
//	codex exec [resume THREAD] --json --skip-git-repo-check
//	    -c approval_policy="never" -c sandbox_mode="read-only|workspace-write"
//	    [-c developer_instructions=…] [-c model_reasoning_effort=…]
//	    [-c model_provider="flow" -c model_providers.flow.…]
//	    [-m MODEL] [--output-schema FILE] -
//
// with the turn text on stdin, read from a regular file so that Codex sees
// EOF at once (it waits forever on an open pipe). The sandbox is read-only
// unless the agent's tools include write, edit or bash. The agent's body
// becomes Codex's developer instructions and its thinking level the
// reasoning effort. A typed output passes the node's JSON Schema with
// --output-schema, Codex's native structured output.
//
// # Server and key
//
// When the agent has a `base_url:`, or the driver a configured one
// (Options.BaseURL), Codex is pointed at it through a `model_providers.flow`
// entry given with -c: wire_api "responses", the key read by Codex itself
// from the variable named by `api_key_env:` (default OPENAI_API_KEY), and
// bounded retries (Options.MaxRetries request retries and as many stream
// retries; one of each unless the configuration says otherwise) so that a
// failing server fails the turn within seconds and flow's own retry policy
// decides what happens next. The key never appears on the command line or
// on disk: Codex reads it from the environment it inherits.
//
// The provider's base_url is not the server's but the turn's meter (see
// Usage), which forwards every request to it.
//
// Codex keeps its threads in CODEX_HOME. Options.CodexHome sets it for
// every turn (tests use a temporary directory). Otherwise, with a base URL the
// driver gives Codex a home of its own in the scope's home
// (<Home>/codex-home), so a resumed run finds its thread and the user's
// ~/.codex is left alone; without one, Codex uses the user's own home and
// login.
//
// # Delegation
//
// A turn with a Delegate gets flow's delegate MCP server through -c
// overrides of mcp_servers.flow: command and args are
// Delegation.Server with --agent flags (package mcpserver), env_vars
// hands the socket and the token on from Codex's own environment (so
// neither is on the command line the transcript records), and
// default_tools_approval_mode "approve" runs the tool without asking (under
// approval_policy "never" a tool that needs approval is refused). Codex
// offers it in the namespace mcp__flow as the function delegate.
// required=true and startup_timeout_sec=60 make Codex wait for the server
// before its first request, and fail if it never starts, rather than
// send the request without the tool (which it did by default).
//
// # Outcome
//
// The JSONL stream decides, not the exit code alone. Completed means a clean
// exit, a well-formed stream, a turn.completed event and a last agent
// message with text. turn.failed, a fatal error, a malformed line, no
// turn.completed, or no answer fail the turn with ordered diagnostics; error
// items and retry notices on the way are kept as diagnostics too, as are
// event types this driver does not know (they do not fail a turn). Stderr is
// kept whole. On cancellation the process tree ends through package proc and
// Turn returns an Aborted result with context.Cause.
//
// # Usage
//
// By the rule of package usage (docs/drivers.md#usage), from
// turn.completed.usage: input_tokens (which includes the cached ones, taken
// out of input), cached_input_tokens as cache_read,
// cache_write_input_tokens as cache_write, output_tokens. That usage is the
// whole thread's, so the driver keeps each thread's last figures in
// <Home>/<agent>.codex-usage.json and a resumed turn records what it
// added. Codex reports no cost: it stays null.
//
// Codex's stream reports usage only at turn.completed. So with a server,
// each request goes through the turn's meter (package meter): a listener on
// 127.0.0.1, opened with the turn and closed with it, that forwards each
// request unchanged (its body read whole first, its answer unbuffered:
// httputil.ReverseProxy, the key header untouched and never logged) and reads the response's usage as it passes
// — the Responses API's final event, a Chat Completions usage chunk, or a
// whole JSON body — before Codex reads it. Each request's usage goes into
// the stream's ledger and the turn's progress at once, so a turn stopped
// mid-way records what it was billed (partial), and the budget watch sees
// it. Before forwarding a request the meter asks Turn.Affords, with what
// the turn spent and its largest request so far: one it says no to is
// answered with an HTTP 400 that ends Codex's turn, never reaches the
// server, and the turn fails engine.ErrBudget. Without a server (Codex's
// own login) there is no meter: a turn stopped before turn.completed
// records none (null), partial.
//
// # Transcript
//
// Package transcript keeps it, as for every driver: after the turn's header
// and a record of the command line, every stdout line is appended as it
// arrives to <Home>/<agent>.jsonl; a summary closes the turn and
// <Home>/<agent>.html is rebuilt. The key's value is redacted from
// everything written there.
//
// # Processes
//
// Package agentcli runs Codex (stdin from a file, stdout read line by line,
// the process tree in a group of its own through package proc).
//
// A Driver holds only settings: it is immutable and safe for concurrent use.
package codex
