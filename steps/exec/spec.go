package exec

import "github.com/flowrun/flow/engine"

// Spec describes the exec driver to an engine.Registry: the name `exec` and
// a constructor. It reads no configuration: what runs is each agent's own
// `command:`. It returns a new value each time, so no caller can change
// another's.
func Spec() engine.DriverSpec {
	return engine.DriverSpec{
		Name: "exec",
		New:  func(engine.DriverConfig) (engine.Driver, error) { return New(Options{}), nil },
	}
}
