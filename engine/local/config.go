package local

import (
	"github.com/flowrun/flow/engine"
)

// Config is the local host's wiring of one run: where it is kept and
// where it works, what runs its leaves, the runtime it walks on and its
// delegation server. It is the host's, beside the walker's settings
// (engine.Options), which every run takes alike wherever it walks; package
// runner builds both for every entry point (docs/architecture.md).
type Config struct {
	// Drivers run agent turns, by driver name (pi, claude, codex, openai,
	// exec); Commands runs `run:` nodes. Both must be given for flows that
	// use them, unless Leaves is.
	Drivers  map[string]engine.Driver
	Commands engine.Commander
	// RunsDir holds run directories; default .flow/runs under WorkDir.
	RunsDir string
	// WorkDir is where the run works (engine.Host.WorkDir); default the
	// current directory. The snapshot records it.
	WorkDir string
	// Leaves runs agent turns and commands; default the Leaves of Drivers
	// and Commands. A recording that answers them (package reuse)
	// replaces both.
	Leaves engine.LeafRunner
	// Runtime is where the walk happens; default Runtime{}, this process.
	Runtime engine.Runtime
	// Delegates opens the delegation server of a run in its run directory
	// (Delegates) and returns it with what closes it; nil: no turn may
	// delegate, and a plan that delegates is refused (docs/delegation.md).
	Delegates func(runDir string) (engine.Delegator, func())
}
