// Tools the checks build, kept out of flow's own go.mod so that their
// dependencies never enter flow's build (docs/decisions.md, "A pure
// walker").
module github.com/flowrun/flow/tools

go 1.26.8

require go.temporal.io/sdk/contrib/tools/workflowcheck v0.6.0 // indirect

require (
	golang.org/x/mod v0.30.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/tools v0.39.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)

tool go.temporal.io/sdk/contrib/tools/workflowcheck
