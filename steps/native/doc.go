// Package native implements the `native` agent driver (docs/native.md): a
// coding agent of flow's own for any OpenAI-compatible /v1/chat/completions
// server (Ollama, vLLM, llama.cpp, a hosted API), with no agent CLI.
//
// A turn is a loop: a request (package openai's exchange: the limiter of
// the provider key, the stream, the one usage ledger), and while the answer
// calls tools, the calls — bash, read, edit (tools.go), and delegate when
// the turn may delegate — one after another, and the next request with
// their results; at most the agent's max_steps requests (DefaultMaxSteps).
// The answer that calls no tool is the turn's answer: typed outputs,
// memory (the session's history in the home) and the transcript are the
// openai driver's.
//
// # Protocols
//
// Tools are offered as the request's tools (ProtocolNative). A server
// that refuses a request with tools (HTTP 400, 422, 501), or a model that
// writes a call as text in its answer, switches the turn to ProtocolText:
// the system message describes the tools and a fenced ```tool block, and
// results come back as user messages (textproto.go). Each call's fact
// records its protocol.
//
// # Sandbox
//
// bash runs under package sandbox unless the agent says `sandbox: off`; a
// turn whose agent may run bash and finds no sandbox is refused
// (unavailable). read reads anywhere, as the sandbox does; edit writes
// only in the working directory, outside .git, the sandbox's rule kept in
// flow's own process (toolbox.writable).
//
// # Journal and resume
//
// Every call, once its result is in, is a tool fact (engine.ToolLog,
// record.ToolCall): the call, its result (bounded by OutputLimit and
// ArgsLimit, redacted by the journal's writer), and, on an answer's first
// call, the answer's text and usage. A turn given the calls of an
// unfinished turn with the same first request rebuilds its conversation
// from them and goes on from the first request not answered (resume.go):
// no call is made twice, and their usage counts in the turn's ledger.
//
// # Context guard
//
// An answer whose server counted far fewer prompt tokens than the request
// holds fails the turn, "context truncated" (guard.go). A server that
// answers GET /api/version is Ollama: its requests carry options.num_ctx.
//
// A Driver holds settings and a cache of which servers are Ollama: it is
// safe for concurrent use.
package native
