// Package transcript writes the transcripts of agent turns into a memory
// scope's home (docs/flow-files.md, agent: memory), in one format for every agent driver (pi,
// claude, codex, openai): the raw stream, line by line, to
// <home>/<agent>.jsonl, and a readable, self-contained <home>/<agent>.html
// rebuilt after every turn.
//
// A driver opens a Log at the start of a turn with the turn's Header, hands
// it each raw line of the stream as it arrives (so that `flow tail` sees a
// running turn), and ends it with the turn's result and the Steps it read
// from the stream. Every turn in the JSONL file is thus
//
//	{"flow_turn_start": {visit, driver, model, session, started, system, prompt}}
//	… the raw stream (a line that is not JSON is wrapped as {"raw": line}) …
//	{"flow_turn": {… the header's fields, status, steps, answer, usage, diagnostics, stderr}}
//
// The HTML page is rendered from the summary lines, so the JSONL file stays
// the single source of both; html/template escapes every value in it.
//
// # Long answers
//
// Answer holds at most engine.AnswerLimit bytes of a turn's answer and
// streams a longer one into an answer file in the home
// (rundir.CreateAnswerFile), where it is stored once; End does the same
// for an answer a driver's parser read whole (StoreAnswer), so the
// summary, like the journal, carries a prefix and the file. The raw stream
// kept of one turn is cut after MaxRaw bytes.
//
// # Secrets
//
// A Log and an Answer write everything through the turn's redactor
// (engine.Turn.Secrets, package secret), the header included; Redact adds
// values of its own (a key a driver knows by another name). The raw
// stream is redacted across its lines (secret.Lines): a key a model
// streams in many chunks is cut out of every one, so that joining the
// chunks kept gives nothing back. Of stderr a driver keeps the end (Tail). Drivers never
// hand them a key on purpose; this is the second line of defence (docs/drivers.md:
// no secret in the run directory), and the engine's sweep of the home when
// a visit ends is the third.
//
// # Sharing
//
// A Log belongs to one turn and is used by one goroutine at a time. Turns
// of one agent in one home never overlap: the engine runs one visit at a
// time per memory scope, and a visit without memory has a home of its own.
// A nil *Log is valid and writes nothing.
package transcript
