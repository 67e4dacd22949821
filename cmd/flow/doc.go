// Command flow runs declarative YAML flows over coding-agent subagents.
//
//	flow run FILE [--input JSON | -i key=value …] [--model M] [--timeout D] [--json] [--reuse[=RUN,…]] [--temporal HOST:PORT]
//	flow resume [RUN]
//	flow signal RUN EVENT [--data JSON|@FILE]
//	flow test FILE [--record] [--cassette DIR] [--live-commands]
//	flow validate FILE… [--preflight]
//	flow plan FILE [--mermaid] [--reuse[=RUN,…]]
//	flow sweep FILE | --resume SWEEP
//	flow pin SWEEP
//	flow serve DIR
//	flow worker --temporal HOST:PORT
//	flow delegate AGENT TASK
//	flow runs | show [RUN] | tail RUN [VISIT] | gc
//	flow fork RUN --at VISIT [--input …] [--assign AGENT=M] [--set VISIT=VALUE]
//	flow diff RUN RUN [--json]
//	flow gate FILE --inputs TASKS (--min-success P | --baseline SWEEP [--reuse]) [--junit FILE] [--json]
//	flow agents [FILE]
//	flow schema
//
// (and the hidden mcp-delegate, which Claude Code and Codex start.)
//
// Exit codes: 0 the run succeeded, 1 it failed, 2 the flow or the command
// line is invalid, 4 the run waits (a wait: node, docs/waits.md; flow
// resume goes on), 130 interrupted; flow gate exits 3 when a task is
// inconclusive and none failed. Configuration comes from flags, FLOW_*
// environment variables, .flow/config.yaml and ~/.config/flow/config.yaml,
// in that order (spf13/viper); flow files themselves are never read through
// viper, which would lose their positions.
//
// This package reads flags and configuration, renders progress and maps
// outcomes to exit codes; it registers the drivers this build provides and
// gets every run from the composition root, package runner, built once
// (runner.New) — it builds no driver, host or engine.Options itself. The
// CLI's behaviour is pinned by testscript scripts in testdata/script.
package main
