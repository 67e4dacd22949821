package temporal

import (
	"fmt"

	"github.com/flowrun/flow/engine"
)

// maxLeafInput bounds what one visit's activity input carries: Temporal
// refuses a payload over 2 MB by default, and a command it refuses fails
// the workflow's task again and again, so a visit whose prompt (or
// command) is longer fails at once, `unavailable`, saying why.
const maxLeafInput = 1536 << 10

// tooLarge is the failure of a visit whose input passes maxLeafInput.
func tooLarge(what string, n int) error {
	return fmt.Errorf("%w: the %s is %d KiB, more than a visit carries on Temporal (%d KiB, under its 2 MB payload limit)",
		engine.ErrUnavailable, what, n>>10, maxLeafInput>>10)
}

func turnSize(in *TurnInput) int { return len(in.Prompt) + len(in.OutputSchema) }

func commandSize(in *CommandInput) int {
	n := len(in.Script)
	for _, s := range in.Argv {
		n += len(s)
	}
	for _, s := range in.Env {
		n += len(s)
	}
	return n
}
