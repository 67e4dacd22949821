package temporal

import (
	"context"
	"errors"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ordered"
)

// keyEnvs are the variables plan's agents take their keys from, sorted.
func keyEnvs(plan *flows.Plan) []string {
	var out []string
	for _, name := range ordered.Keys(plan.Agents) {
		if a := plan.Agents[name]; a.APIKeyEnv != "" && !slices.Contains(out, a.APIKeyEnv) {
			out = append(out, a.APIKeyEnv)
		}
	}
	slices.Sort(out)
	return out
}

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
	vs := readVersions(ctx)
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
	var asker engine.Asker
	if in.Attended {
		a, err := newSignalAsker(ctx)
		if err != nil {
			return nil, err
		}
		asker = a
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
		Input:       snap.Input,
		Settings:    flows.Settings{Model: snap.Settings.Model, Models: snap.Settings.Models, Timeout: timeout, TurnTimeout: turnTimeout},
		Concurrency: snap.Settings.Concurrency,
		Config:      snap.Settings.Config,
		Backoff:     timing.Backoff,
		Asker:       asker,
	}
	origin := in.Origin
	if origin == "" {
		origin = snap.Settings.WorkDir
	}
	ws := newWorkspace(runID, snap.Settings.WorkDir, info.TaskQueueName, timing)
	lv := leaves{queue: info.TaskQueueName, timing: timing, origin: origin, keyEnvs: keyEnvs(plan), rec: rec, ws: ws, cont: cont}
	if vs.visitIDs {
		lv.ids = map[string]int{}
	}
	// The workflow's host: its coroutines and clock, its leaves as
	// activities on workers that cannot be watched live (blind), its
	// facts in its state; no redactor (leaves redact on their workers);
	// its workspace is the repositories' remotes, which every worker
	// reaches (docs/temporal.md, "Working copies on workers").
	dels, err := newDelegates(ctx)
	if err != nil {
		return nil, err
	}
	run, err := withReused(lv, in.Reused, dels)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("the recorded visits the run reuses do not read: "+err.Error(), "refused", nil)
	}
	waiter, err := newSignalWaiter(ctx, in.Events)
	if err != nil {
		return nil, err
	}
	host := engine.NewHost(engine.Parts{Runtime: runtime{root: ctx}, Leaves: run, Recorder: rec, Blind: true, Workspace: ws, Delegator: dels, Waiter: waiter, WorkDir: snap.Settings.WorkDir})
	// The workflow's cancellation stops the walk with the cause a Ctrl-C
	// gives, from a coroutine: deterministic.
	//workflowcheck:ignore Background has no Done, so no goroutine starts; stop runs whole on one coroutine
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
		in.Events = waiter.events // those taken until now stay delivered
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
