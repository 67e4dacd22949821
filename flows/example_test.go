package flows_test

import (
	"fmt"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// A flow is checked whole before anything runs: every fault is reported at
// once, each at its line and column, quoting the line with a caret
// under the column.
func ExampleLoadSource() {
	src := []byte(`name: review
nodes:
  - id: tests
    run: [go, test, ./...]
  - id: ship
    choice:
      - when: tests.output.passed == "yes"
        do: [{id: deploy, run: [make, deploy], timout: 5m}]
`)
	_, diags := flows.LoadSource("review.yaml", src, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	for _, d := range diags {
		fmt.Println(d)
	}
	// Output:
	// review.yaml:7:35: expr: invalid operation: == (mismatched types bool and string)
	//     7 |       - when: tests.output.passed == "yes"
	//       |                                   ^
	// 	hint: compare values of the same type; see the node's declared output:
	// review.yaml:8:48: unknown-key: unknown key "timout" in a node
	//     8 |         do: [{id: deploy, run: [make, deploy], timout: 5m}]
	//       |                                                ^
	// 	hint: did you mean "timeout"?
}
