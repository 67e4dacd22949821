package main

import "github.com/spf13/cobra"

// examples are the Example lines of each command's --help, run from the
// repository root (the flows are the examples'); a command that sets its
// own Example keeps it. They are kept here, in one place, so that a help
// text reads the same across commands.
var examples = map[string]string{
	"run": `  flow run examples/fanout.yaml
  flow run examples/fanout.yaml --input '{"files": ["go.mod"]}'
  flow run examples/release.yaml -i since="2 days ago" --model sonnet --json`,
	"plan": `  flow plan examples/review.yaml
  flow plan examples/fanout.yaml --mermaid`,
	"resume": `  flow resume                          # the newest resumable run here
  flow resume 20261201-093000-ab12cd --timeout 20m`,
	"runs": `  flow runs
  flow runs --json`,
	"gc": `  flow gc --dry-run
  flow gc`,
	"sweep": `  flow sweep examples/solve.yaml --pin
  flow sweep examples/review.yaml --model small,medium --repeat 3 --budget-cost 2
  flow sweep --resume 20261201-093000-ab12cd`,
	"pin": `  flow pin 20261201-093000-ab12cd`,
	"agents": `  flow agents
  flow agents --project-agents examples/review.yaml`,
	"schema": `  flow schema > flow.schema.json`,
	"serve": `  flow serve examples/
  flow serve examples/ --addr 0.0.0.0:8080 --token-file tokens.txt --max-runs 8`,
	"worker": `  flow worker --temporal 127.0.0.1:7233
  flow worker --temporal 10.0.0.5:7233 --concurrency 4`,
}

// addExamples gives each command without an Example its line from
// examples.
func addExamples(root *cobra.Command) {
	for _, c := range root.Commands() {
		if ex, ok := examples[c.Name()]; ok && c.Example == "" {
			c.Example = ex
		}
	}
}
