package exec

import (
	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/drivers"
)

// Spec describes the exec driver to a drivers.Registry: the name `exec` and
// a constructor. It reads no configuration: what runs is each agent's own
// `command:`. It returns a new value each time, so no caller can change
// another's.
func Spec() drivers.Spec {
	return drivers.Spec{
		Name: "exec",
		New:  func(drivers.Config) (engine.Driver, error) { return New(Options{}), nil },
	}
}
