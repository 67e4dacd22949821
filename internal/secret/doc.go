// Package secret keeps secrets out of everything flow writes or prints
// (docs/drivers.md, Secrets). A Redactor replaces each value it knows, in
// every spelling it knows (encodings: JSON-escaped once and twice,
// percent-encoded, base64), with "[redacted]": in strings, in byte slices,
// in JSON texts (JSON: string values, and keys that are not flow's own, so
// flow's structure survives), in values that round-trip through JSON, in a
// stream (Writer), where a secret split across two writes is still found,
// and in a stream of JSON lines (Lines), where a secret split over the
// texts one field carries across any number of lines is cut out of each.
//
// Which values are secrets is decided where they are known: FromEnviron
// takes every environment variable whose name says it holds one (…_API_KEY,
// …_TOKEN, …_SECRET, …_PASSWORD — the variables every driver reads its key
// from, OPENAI_API_KEY, ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
// CLAUDE_CODE_OAUTH_TOKEN, CODEX_API_KEY, GEMINI_API_KEY among them), and
// the callers add the values of variables named by configuration
// (drivers.<name>.api_key_env) and by agents (api_key_env:). The run
// directory (package rundir) builds its Redactor when it is created, so
// no writer of a run can forget it; cmd/flow puts one in front of stdout
// and stderr.
//
// Values shorter than MinLen, and words flow itself writes, are ignored
// (Unsafe): redacting a one-letter "secret" would redact every occurrence
// of that letter, and one valued "output" flow's own keys. The caller that
// knows the variable warns.
//
// A Redactor is immutable and safe for concurrent use; its nil value
// redacts nothing. A Writer belongs to one stream and is safe for
// concurrent use.
package secret
