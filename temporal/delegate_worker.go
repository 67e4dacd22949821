package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
)

// delegateServer is a worker's side of delegation: the socket its turns'
// processes call (engine/local's, with its token per turn and its check
// of the calling process), opened at the first turn that delegates, each
// call carried to the run's workflow as the update UpdateDelegate.
type delegateServer struct {
	mu     sync.Mutex
	server engine.Delegator
	close  func()
	dir    string
}

// serve opens the delegation of the turn in: what its driver gets, and
// what ends it, which the activity calls before it returns.
func (a *Activities) serveDelegation(ctx context.Context, in *TurnInput) (*engine.Delegation, func(), error) {
	if a.Client == nil {
		return nil, nil, errors.New("this worker has no client to carry delegate calls to the run")
	}
	srv, err := a.delegation()
	if err != nil {
		return nil, nil, err
	}
	info := activity.GetInfo(ctx)
	wf := info.WorkflowExecution
	var mu sync.Mutex
	seen := map[[2]string]int{}
	del, closeFn, err := srv.Serve(ctx, in.Visit, func(ctx context.Context, req engine.DelegateRequest) engine.DelegateReply {
		mu.Lock()
		k := [2]string{req.Agent, req.Task}
		nth := seen[k]
		seen[k]++
		mu.Unlock()
		call := DelegateCall{Token: in.Delegate.Token, Agent: req.Agent, Task: req.Task, Nth: nth}
		h, err := a.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			UpdateID: call.key(), WorkflowID: wf.ID, RunID: wf.RunID, UpdateName: UpdateDelegate,
			Args: []any{call}, WaitForStage: client.WorkflowUpdateStageCompleted})
		var reply engine.DelegateReply
		if err == nil {
			err = h.Get(ctx, &reply)
		}
		if err != nil {
			return engine.DelegateReply{Error: "the call did not reach the run: " + err.Error()}
		}
		return reply
	})
	if err != nil {
		return nil, nil, err
	}
	del.Agents = in.Delegate.Agents
	return del, closeFn, nil
}

// delegation is the worker's delegation socket, opened once.
func (a *Activities) delegation() (engine.Delegator, error) {
	a.deleg.mu.Lock()
	defer a.deleg.mu.Unlock()
	if a.deleg.server == nil {
		open := local.Delegates
		if len(a.DelegateServer) > 0 {
			open = local.DelegatesWith(a.DelegateServer)
		}
		// A directory of this worker's own: workers on one machine may
		// share a runs directory, and each serves its own turns.
		dir := filepath.Join(a.RunsDir, ".workers", fmt.Sprintf("worker-%d", os.Getpid()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		a.deleg.server, a.deleg.close = open(dir)
		a.deleg.dir = dir
	}
	return a.deleg.server, nil
}

// closeDelegation closes the worker's delegation socket, if it opened one.
func (a *Activities) closeDelegation() {
	a.deleg.mu.Lock()
	defer a.deleg.mu.Unlock()
	if a.deleg.close != nil {
		a.deleg.close()
		_ = os.Remove(a.deleg.dir) // empty once the socket is gone
		a.deleg.server, a.deleg.close = nil, nil
	}
}
