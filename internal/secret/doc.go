// Package secret keeps secrets out of everything flow writes or prints
// (docs/drivers.md, Secrets: no secret in the run directory). A Redactor replaces each value
// it knows with "[redacted]": in strings, in byte slices, in values that
// round-trip through JSON, and in a stream (Writer), where a secret split
// across two writes is still found.
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
// Values shorter than MinLen are ignored: redacting a one-letter "secret"
// would redact every occurrence of that letter.
//
// A Redactor is immutable and safe for concurrent use; its nil value
// redacts nothing. A Writer belongs to one stream and is safe for
// concurrent use.
package secret
