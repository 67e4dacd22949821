// Package meter is the metering proxy of the agent CLIs whose own event
// stream reports usage late (docs/drivers.md#usage): one per turn, on
// 127.0.0.1, between the CLI and its model server. It forwards every
// request unchanged (read whole first) and its answer unbuffered, reads each answer's usage
// as it passes (the OpenAI Responses and Chat Completions APIs, the
// Anthropic Messages API; streamed or not), and refuses, before it is
// forwarded, a request the turn's budgets cannot afford
// (engine.Turn.Affords). It never logs a request, nor its key.
package meter
