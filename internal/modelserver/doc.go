// Package modelserver is a scripted model server for tests: it answers the
// OpenAI Chat Completions, OpenAI Responses and Anthropic Messages APIs on
// 127.0.0.1 with replies a test lists in advance, faithfully enough that the
// real agent CLIs (pi, Claude Code, Codex) and the openai driver accept it.
//
// # Lifecycle
//
// Start binds a fresh port on 127.0.0.1 and closes the server on
// t.Cleanup, cutting any stream still open. Point a client at URL() (no
// trailing /v1; the endpoints live under /v1).
//
// # Replies
//
// Every generation request — POST /v1/chat/completions, /v1/responses and
// /v1/messages, streaming or not — takes the next Reply, in order across all
// three endpoints; once the list is exhausted the last Reply repeats. A
// function set with Handle computes the reply instead. Side requests (GET
// /v1/models, POST /v1/messages/count_tokens, HEAD or GET /) are answered
// without consuming a reply. Every request, side requests included, is
// recorded and returned by Requests.
//
// A Reply is either an error (Status other than 0 and 200: an error body in
// the endpoint's own format) or an assistant message: optional Text, then an
// optional ToolCall, streamed in small chunks. Usage defaults to
// len(request body)/4 input tokens and len(Text)/4 output tokens, so a test
// can predict it; set Input and Output to report other numbers. CacheRead
// and CacheWrite are the share of Input reported as read from and written
// to a prompt cache, each API in its own convention.
//
// # Bills
//
// Every answered generation request is billed its Input (cache included)
// plus its Output, and Bills and Billed say what the server billed so far
// (an error reply bills nothing), so that a test compares what a client
// recorded with what it was charged.
//
// # Rate limits
//
// SetLimit holds generation requests to N per window (fixed windows from the
// first request; the window is configurable, a minute by default, so a test
// of "N a minute" can run at N per few seconds). A request over the limit is
// refused with 429, Retry-After and retry-after-ms and the endpoint's error
// body; admitted ones carry the rate-limit headers of the API. Its quota mode
// refuses every request after the first few with a quota error that will not
// pass (OpenAI's insufficient_quota; Anthropic's credit balance). A refused
// request takes no reply. LimitLog says when each request came and whether
// it was refused.
//
// # Sharing
//
// A Server is safe for concurrent use: requests may arrive in parallel and
// a test may call Requests while they do.
package modelserver
