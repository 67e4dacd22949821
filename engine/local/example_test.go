package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
)

// shout is a Driver that answers every turn in capitals: the smallest
// in-process agent.
type shout struct{}

func (shout) Turn(_ context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	first, _, _ := strings.Cut(t.Prompt, "\n")
	return &engine.TurnResult{Status: engine.Completed, Output: strings.ToUpper(first)}, nil
}

// Execute runs a checked plan and records it in a run directory; every
// visit's outcome is in the journal.
func ExampleExecute() {
	dir, _ := os.MkdirTemp("", "flow-example-")
	defer os.RemoveAll(dir)
	src := []byte(`name: hello
input: {names: [string]}
agents:
  - {name: shouter, description: shouts, driver: exec, command: [unused]}
nodes:
  - id: greet
    map: input.names
    max: 10
    do: [{id: say, agent: shouter, prompt: "hello ${{ item }}"}]
`)
	plan, diags := flows.LoadSource(filepath.Join(dir, "hello.yaml"), src, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		fmt.Println(diags)
		return
	}
	res, err := local.Execute(context.Background(), plan, local.Config{Drivers: map[string]engine.Driver{"exec": shout{}}, RunsDir: filepath.Join(dir, "runs")}, engine.Options{
		Input: map[string]any{"names": []any{"ada", "bo"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	facts, _ := rundir.ReadJournal(res.Dir)
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Output != nil {
			fmt.Println(f.Visit, f.Output)
		}
	}
	fmt.Println(res.Status())
	// Output:
	// greet[1]/say HELLO ADA
	// greet[2]/say HELLO BO
	// succeeded
}
