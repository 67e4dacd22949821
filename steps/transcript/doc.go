// Package transcript writes the transcripts of agent turns into a memory
// scope's home (SPEC 3.4): the raw stream, line by line, to
// <home>/<agent>.jsonl, and a readable, self-contained <home>/<agent>.html
// rebuilt after every turn.
//
// A driver opens a Log at the start of a turn, hands it each raw line of the
// stream as it arrives (so that `flow tail` sees a running turn), and ends it
// with a Turn summary. The summary is appended to the same JSONL file as one
// line {"flow_turn": {...}}; the HTML page is rendered from those summary
// lines, so the JSONL file stays the single source of both.
//
// # Secrets
//
// A Log replaces every occurrence of the values given to Redact with
// "[redacted]" in everything it writes. Drivers never hand it a key on
// purpose; this is the second line of defence (SPEC 4: no secret in the run
// directory).
//
// # Sharing
//
// A Log belongs to one turn and is used by one goroutine. Turns of one
// agent in one home never overlap: the engine runs one visit at a time per
// memory scope, and a visit without memory has a home of its own.
package transcript
