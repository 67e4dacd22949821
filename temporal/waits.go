package temporal

import (
	"fmt"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
)

// checkWaits refuses, before anything of a run is made, a plan with a
// wait: node: a wait on Temporal would be a workflow timer and a signal,
// which the run workflow does not keep yet (docs/waits.md, "On
// Temporal").
func checkWaits(plan *flows.Plan) error {
	for _, f := range plan.Flows {
		var found *flows.Node
		flows.EachNode(f.Nodes, func(n *flows.Node) {
			if found == nil && n.AsWait() != nil {
				found = n
			}
		})
		if found != nil {
			return &engine.RefusedError{Msg: fmt.Sprintf("%s: wait %q cannot run on Temporal yet; run the flow with flow run or flow serve without --temporal (docs/waits.md)", found.Pos, found.ID)}
		}
	}
	return nil
}
