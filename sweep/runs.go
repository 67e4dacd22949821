package sweep

import (
	"context"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
)

// Runs walks the runs of a sweep's cells. Each method returns when the
// run ended (or stopped), with its run directory written; an error means
// the run could not start or be taken up. Cancelling ctx with
// engine.ErrStopped stops the run (its running visits end stopped).
//
// LocalRuns walks them in this process. A *temporal.Client walks each as
// a run workflow on Temporal's workers and mirrors it into the cell's run
// directory (flow sweep --temporal), so the sweep reads every cell the
// same way wherever it ran.
type Runs interface {
	// Execute runs plan into a new run directory, as engine.Execute.
	Execute(ctx context.Context, plan *flows.Plan, opts engine.Options) (*engine.Result, error)
	// Resume continues the run in dir that was cut off or stopped, as
	// flow resume does: nothing that ended runs again.
	Resume(ctx context.Context, dir string, load flows.Options, opts engine.Options) (*engine.Result, error)
}

// LocalRuns walks cells' runs in this process: engine.Execute and
// engine.Resume. Its zero value is ready to use.
type LocalRuns struct{}

var _ Runs = LocalRuns{}

// Execute is engine.Execute.
func (LocalRuns) Execute(ctx context.Context, plan *flows.Plan, opts engine.Options) (*engine.Result, error) {
	return engine.Execute(ctx, plan, opts)
}

// Resume is engine.Resume.
func (LocalRuns) Resume(ctx context.Context, dir string, load flows.Options, opts engine.Options) (*engine.Result, error) {
	return engine.Resume(ctx, dir, load, opts)
}

// Temporal is the Temporal server a sweep's cells run on (flow sweep
// --temporal), as sweep.json records it: a resume goes back there unless
// told otherwise.
type Temporal struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace,omitempty"`
	TaskQueue string `json:"task_queue,omitempty"`
}
