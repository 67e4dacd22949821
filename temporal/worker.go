package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Worker polls a shared task queue for run workflows and visits, and a
// queue of its own for the later turns of memory scopes whose sessions it
// holds (docs/temporal.md, Memory scopes: a session lives where its first turn ran). Made by
// NewWorker, run once by Run.
type Worker struct {
	shared, own worker.Worker
	queue, mine string
	acts        *Activities
}

// NewWorker returns a worker on queue (DefaultTaskQueue if empty) that
// runs visits with acts; acts.Queue and acts.Host are filled in here.
func NewWorker(c client.Client, queue string, acts *Activities) *Worker {
	if queue == "" {
		queue = DefaultTaskQueue
	}
	host, _ := os.Hostname()
	var b [3]byte
	_, _ = rand.Read(b[:])
	// The own queue names the machine and process: it is what a failure
	// names when this worker is gone, and what the journal records.
	mine := fmt.Sprintf("%s@%s-%d-%s", queue, host, os.Getpid(), hex.EncodeToString(b[:]))
	acts.Queue, acts.Host = mine, host
	if acts.Client == nil {
		acts.Client = c
	}
	// A run that continued as new replays thousands of ended visits in
	// its first workflow task, and packs them when it continues again: on
	// a busy machine that outlasts the SDK's 1 s deadlock detection, which
	// is there to catch a workflow that never yields, not a long one.
	opts := worker.Options{Identity: mine, WorkerStopTimeout: 5 * time.Second, DeadlockDetectionTimeout: 8 * time.Second}
	sharedOpts := opts
	sharedOpts.MaxConcurrentActivityExecutionSize = max(acts.Concurrency, 0)
	shared := worker.New(c, queue, sharedOpts)
	shared.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	register(shared, acts)
	registerWorkspace(shared, acts)
	ownOpts := opts
	ownOpts.DisableWorkflowWorker = true
	own := worker.New(c, mine, ownOpts)
	register(own, acts)
	return &Worker{shared: shared, own: own, queue: queue, mine: mine, acts: acts}
}

func register(w worker.Worker, acts *Activities) {
	w.RegisterActivityWithOptions(acts.Turn, activity.RegisterOptions{Name: TurnActivity})
	w.RegisterActivityWithOptions(acts.Command, activity.RegisterOptions{Name: CommandActivity})
}

// Queue is this worker's own task queue.
func (w *Worker) Queue() string { return w.mine }

// Run polls until ctx ends, then stops: running visits get a few seconds
// to end, then their activities fail and Temporal retries them elsewhere.
func (w *Worker) Run(ctx context.Context) error {
	defer w.acts.closeDelegation() // once the workers stopped: no turn is left to call
	if err := w.own.Start(); err != nil {
		return fmt.Errorf("starting the worker on %s: %w", w.mine, err)
	}
	defer w.own.Stop()
	if err := w.shared.Start(); err != nil {
		return fmt.Errorf("starting the worker on %s: %w", w.queue, err)
	}
	defer w.shared.Stop()
	<-ctx.Done()
	return nil
}
