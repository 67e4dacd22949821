// Command flow runs declarative YAML flows over coding-agent subagents.
//
//	flow run FILE [--input JSON | -i key=value …] [--model M] [--timeout D] [--json]
//	flow validate FILE…
//	flow plan FILE [--mermaid]
//	flow resume [RUN]
//	flow runs | show [RUN] | tail RUN [VISIT]
//	flow diff RUN RUN [--json]
//	flow gate FILE --inputs TASKS (--min-success P | --baseline SWEEP [--reuse]) [--junit FILE] [--json]
//	flow agents [FILE]
//	flow schema
//
// Exit codes: 0 the run succeeded, 1 it failed, 2 the flow or the command
// line is invalid, 130 interrupted; flow gate exits 3 when a task is
// inconclusive and none failed. Configuration comes from flags, FLOW_*
// environment variables, .flow/config.yaml and ~/.config/flow/config.yaml,
// in that order (spf13/viper); flow files themselves are never read through
// viper, which would lose their positions.
//
// This package wires the parts together: it registers the drivers and the
// run-node commander with the engine, renders progress, and maps outcomes to
// exit codes. The CLI's behaviour is pinned by testscript scripts in
// testdata/script.
package main
