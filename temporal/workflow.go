package temporal

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
)

// Workflow is the run workflow: it rebuilds the plan from the run's
// snapshot and walks it with the engine's own walker, on the workflow's
// coroutines and clock (runtime), its leaves as activities (leaves), and
// its facts in its state (recorder), which the facts query reads. A
// cancellation of the workflow stops the run as Ctrl-C does: running
// visits end `stopped`, and the workflow completes with the run's end.
//
// A run that cannot start (its snapshot no longer loads, its input does
// not fit) fails the workflow with a non-retryable error of type
// "refused".
func Workflow(ctx workflow.Context, in *RunInput) (*RunOutput, error) {
	rec := &recorder{}
	if err := workflow.SetQueryHandler(ctx, QueryFacts, rec.page); err != nil {
		return nil, err
	}
	if in == nil || in.Snapshot == nil {
		return nil, temporal.NewNonRetryableApplicationError("the run workflow was started without a snapshot", "refused", nil)
	}
	cont, earlier, err := continued(ctx, in, rec)
	if err != nil {
		return nil, err
	}
	snap := in.Snapshot
	plan, diags := flows.Reload(snap.File, snap.Sources(), snap.Agents, snap.Settings.WorkDir, flows.Options{DefaultDriver: in.Load.DefaultDriver, Drivers: in.Load.Drivers})
	if diags.HasErrors() {
		return nil, temporal.NewNonRetryableApplicationError("the run's snapshot does not load:\n"+diags.Error(), "refused", nil)
	}
	timing := in.Timing.withDefaults()
	info := workflow.GetInfo(ctx)
	runID := snap.Run
	if runID == "" { // started by a Temporal Schedule: the workflow id names the run
		runID = info.WorkflowExecution.ID
	}
	timeout, turnTimeout := snap.Settings.Durations()
	// The settings are the snapshot's, a sweep cell's models by agent
	// (--assign) included.
	opts := engine.Options{
		RunID:       runID,
		WorkDir:     snap.Settings.WorkDir,
		Input:       snap.Input,
		Settings:    flows.Settings{Model: snap.Settings.Model, Models: snap.Settings.Models, Timeout: timeout, TurnTimeout: turnTimeout},
		Concurrency: snap.Settings.Concurrency,
		Config:      snap.Settings.Config,
		Backoff:     timing.Backoff,
	}
	// The workflow's host: its coroutines and clock, its leaves as
	// activities on workers that cannot be watched live (blind), its
	// facts in its state; no redactor (leaves redact on their workers)
	// and no workspace (working copies need the run's machine).
	host := engine.NewHost(engine.Parts{Runtime: runtime{root: ctx}, Leaves: leaves{queue: info.TaskQueueName, timing: timing, cont: cont}, Recorder: rec, Blind: true})
	// The workflow's cancellation stops the walk with the cause a Ctrl-C
	// gives, from a coroutine: deterministic.
	root, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	workflow.Go(ctx, func(c workflow.Context) {
		c.Done().Receive(c, nil)
		stop(engine.ErrStopped)
	})
	res, err := cont.walk(ctx, func(w workflow.Context) (*engine.Result, error) {
		return engine.Walk(withWorkflow(root, w), plan, opts, host, earlier)
	})
	if errors.Is(err, errContinue) {
		return nil, cont.next(ctx, in, earlier[len(in.Earlier):], rec)
	}
	if res == nil {
		var ie *engine.InputError
		var re *engine.RefusedError
		if errors.As(err, &ie) || errors.As(err, &re) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
		}
		return nil, err
	}
	endedAs(ctx, in, res.Status())
	return packed(&RunOutput{OK: res.OK, Status: res.Status(), Output: rec.output, Failure: res.Failure, Usage: res.Usage, Values: rec.values, Overspend: res.Overspend})
}
