package local

import (
	"fmt"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// checkHost refuses a run this host could not carry through: a plan
// that delegates without cfg.Delegates, and, when cfg.Leaves is nil
// (the leaves will be made of Drivers and Commands), a run node without
// a command runner or an agent whose driver is not given.
func checkHost(plan *flows.Plan, cfg *Config) error {
	if cfg.Delegates == nil {
		if err := engine.RefuseDelegation(plan); err != nil {
			return err
		}
	}
	if cfg.Leaves != nil {
		return nil
	}
	// Flows by name, so that a refusal names the same node every time.
	for _, name := range ordered.Keys(plan.Flows) {
		var err error
		flows.EachNode(plan.Flows[name].Nodes, func(n *flows.Node) {
			switch {
			case err != nil:
			case n.Kind == schema.KindRun && cfg.Commands == nil:
				err = &engine.RefusedError{Msg: fmt.Sprintf("%s: no command runner is configured for run nodes", n.Pos)}
			case n.Agent() != nil && cfg.Drivers[n.Agent().Driver] == nil:
				err = &engine.RefusedError{Msg: fmt.Sprintf("%s: agent %q uses driver %q, which this build of flow does not provide", n.Pos, n.Agent().Name, n.Agent().Driver)}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
