// Package openai implements the `openai` agent driver (docs/drivers.md): one turn is
// one streaming request to an OpenAI-compatible /v1/chat/completions
// endpoint, or several when the model calls the tools it is offered. A turn
// that may delegate (Turn.Delegate) is offered one tool, delegate; any
// other turn none, and the model answers from the turn text.
//
// # Server, key and model
//
// The server is the agent's `base_url:`, else the driver's configured
// default (Options.BaseURL), else https://api.openai.com/v1. The request goes
// to base_url + "/chat/completions"; a base URL with no path at all (e.g.
// http://127.0.0.1:11434) gets "/v1" first. The key is read at each turn
// from the environment variable named by `api_key_env:` (default
// OPENAI_API_KEY); when it is unset or empty no Authorization header is sent,
// which local servers accept. The model is Turn.Model, else the agent's; a
// turn with neither fails with a diagnostic before any request.
//
// The request carries the agent's instructions as the system message, the
// session's earlier exchanges, then the turn text as the user message, with
// stream_options.include_usage. A typed output adds response_format
// json_schema; strict is set only when the schema meets OpenAI's strict
// rules (every property required, no open schema), and a schema whose root is
// not an object is left to the prompt's own answer-format instruction, since
// json_schema response formats need an object root.
//
// # Delegation
//
// A turn with a Delegate offers the function delegate (steps/delegate's
// schema: agent, one of the agents, and task). While an answer ends with
// finish_reason tool_calls, the driver serves its calls at once, each
// through steps/delegate.Call to the run's socket, appends the assistant's
// message with its tool_calls and one tool message per call (the child's
// answer, or "Error: " and why there is none), and sends the next request.
// A call of any other tool gets an error result naming the one tool there
// is. At most MaxRounds requests are sent: a model still calling tools in
// the last fails the turn, still requesting tools. Every round's request
// and the calls' results are in the transcript; only the turn text and
// the final answer go into the session's history. Each call is also a
// tool fact of the journal (protocol openai, with the usage of the answer
// that made it, without arguments or result; never replayed), so that the
// run's trace has a chat span per request and an execute_tool span per
// call (docs/tracing.md).
//
// # Outcome
//
// Completed means HTTP 200, a well-formed stream that ends with [DONE], a
// finish_reason of "stop", and non-blank text. Otherwise the turn is Failed
// with ordered diagnostics: the HTTP status and the server's message,
// malformed line N, an error object in the stream, "hit its length limit",
// "still requesting tools", no finish reason, no answer. The driver does not
// retry: retries are the engine's. On cancellation the request is dropped and
// Turn returns an Aborted result together with context.Cause.
//
// # Usage
//
// By the rule of package usage (docs/drivers.md#usage): input, output and
// cached tokens come from the usage the server reports under the
// completion's id (the last report of it stands: some servers send one in
// every chunk); prompt_tokens counts the cached ones, which input does
// not. A server that sends none leaves them not reported, and a count of
// chunks is no usage. A stream stopped or cut before [DONE] records what
// it had reported, partial. Cost is never reported. Turns is the number
// of rounds answered, and 1 for a turn of one request. A turn's rounds share one
// ledger, so each answer counts once and the live figure is the turn's.
//
// # Memory
//
// A completed turn's exchange is appended to the session history in
// <Home>/<agent>.history.json, keyed by a generated session id that is
// returned as TurnResult.Session; a turn given that id sends the history
// again. Because the history lives in the run directory, a resumed run
// continues the same conversation. A turn given a session id that the file
// does not hold fails rather than silently forgetting.
//
// # Transcript
//
// Each turn appends to <Home>/<agent>.jsonl, in package transcript's format
// for every driver, a header, a request record (URL and body, never
// headers), every raw SSE data line, and a summary; <Home>/<agent>.html
// is rebuilt from the summaries (package transcript). The key is never
// written: headers are not recorded, and the key's value is redacted from
// everything the transcript writes.
//
// A Driver holds only settings: it is immutable and safe for concurrent use.
package openai
