package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
)

// Delegation on Temporal (docs/delegation.md, "Where it runs"; the
// decision is in docs/decisions.md): a parent's turn is an activity on a
// worker, which serves the turn's delegate calls on a socket of its own
// (delegateServer) and carries each to the workflow as the update
// UpdateDelegate. The workflow decides the call with the walker's own
// handler, on the update's coroutine: the child is a visit of the walk,
// its turn an activity like any other, under the same limits, budgets and
// attribution as locally. A call is known by its turn's token and its key
// (agent, task, and its repeat within the attempt): the same key from a
// later attempt of the parent's activity — its worker died and Temporal
// runs it again — is answered by the child that key started, waited for
// if it still runs, never by a second child.

// UpdateDelegate is the update a worker sends for one delegate call.
const UpdateDelegate = "flow.delegate"

// DelegateCall is one delegate call carried to the workflow.
type DelegateCall struct {
	// Token names the parent's turn (workflowDelegates.Serve).
	Token string `json:"token"`
	Agent string `json:"agent"`
	Task  string `json:"task"`
	// Nth counts the calls with this agent and task the attempt made
	// before this one: the nth repeat of a call is the nth child.
	Nth int `json:"nth"`
}

// key is the call's identity within its turn: also its update's id, so
// that the server joins a repeated request to the first.
func (c DelegateCall) key() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%q %q %d", c.Agent, c.Task, c.Nth))
	return c.Token + "/" + hex.EncodeToString(h[:12])
}

// TurnDelegation is what a turn's activity needs to serve its delegate
// calls on its worker: the agents it may name (the tool's description)
// and the token its calls carry to the workflow.
type TurnDelegation struct {
	Agents []string `json:"agents"`
	Token  string   `json:"token"`
}

// workflowDelegates is the engine.Delegator of a walk in a workflow: the
// open turns by token, each with its calls by key. Workflow coroutines
// run one at a time: it needs no lock.
type workflowDelegates struct {
	prefix string // the workflow's run id: a token names one execution's turn
	seq    int
	turns  map[string]*delegTurn
}

// delegTurn is one turn's delegation in the workflow.
type delegTurn struct {
	ctx    context.Context // the turn's
	handle engine.DelegateHandler
	closed bool
	calls  map[string]*delegCall
	live   int
	stops  []func()
}

// delegCall is one call of a turn, answered once.
type delegCall struct {
	done  bool
	reply engine.DelegateReply
}

var _ engine.Delegator = (*workflowDelegates)(nil)

// newDelegates registers the update handler of ctx's workflow and returns
// the walk's Delegator.
func newDelegates(ctx workflow.Context) (*workflowDelegates, error) {
	d := &workflowDelegates{prefix: workflow.GetInfo(ctx).WorkflowExecution.RunID, turns: map[string]*delegTurn{}}
	return d, workflow.SetUpdateHandler(ctx, UpdateDelegate, d.call)
}

// Serve opens the delegation of one turn of the walk: its token names it
// to the workflow; the worker that runs the turn opens the socket.
func (d *workflowDelegates) Serve(ctx context.Context, visit string, handle engine.DelegateHandler) (*engine.Delegation, func(), error) {
	w := workflowOf(ctx)
	d.seq++
	token := fmt.Sprintf("%s:%d:%s", d.prefix, d.seq, visit)
	t := &delegTurn{ctx: ctx, handle: handle, calls: map[string]*delegCall{}}
	d.turns[token] = t
	return &engine.Delegation{Token: token}, func() {
		// The turn ended: refuse its calls from now on, end those in
		// flight, and wait for them (engine.Delegator).
		t.closed = true
		for _, stop := range t.stops {
			stop()
		}
		wait, _ := workflow.NewDisconnectedContext(w)
		_ = workflow.Await(wait, func() bool { return t.live == 0 })
		delete(d.turns, token)
	}, nil
}

// call is the update handler: it decides one call on its own coroutine.
func (d *workflowDelegates) call(w workflow.Context, c DelegateCall) (engine.DelegateReply, error) {
	t := d.turns[c.Token]
	if t == nil || t.closed {
		return engine.DelegateReply{Error: "refused: the turn ended"}, nil
	}
	key := c.key()
	if old := t.calls[key]; old != nil {
		// A later attempt of the parent's activity repeats a call an
		// earlier one made: the same child answers it.
		if err := workflow.Await(w, func() bool { return old.done }); err != nil {
			return engine.DelegateReply{Error: "the call was withdrawn: the run stopped"}, nil
		}
		return old.reply, nil
	}
	one := &delegCall{}
	t.calls[key] = one
	t.live++
	defer func() { t.live-- }()
	cw, cancelW := workflow.WithCancel(w)
	// t.ctx is the walk's (context.WithCancelCause over Background, as
	// every walk context): a child of it registers with it and starts no
	// goroutine; it is cancelled only from workflow code (runtime.go).
	//workflowcheck:ignore the parent is a cancelCtx of the walk: no goroutine starts, cancel runs on one coroutine
	cctx, cancel := context.WithCancel(t.ctx)
	t.stops = append(t.stops, func() { cancel(); cancelW() })
	defer cancel()
	one.reply = t.handle(withWorkflow(cctx, cw), engine.DelegateRequest{Token: c.Token, Agent: c.Agent, Task: c.Task})
	one.done = true
	return one.reply, nil
}

// isChild says the visit at path is a delegated child (its last step is
// delegate:AGENT#n).
func isChild(path string) bool {
	i := strings.LastIndexByte(path, '/')
	return strings.HasPrefix(path[i+1:], "delegate:")
}
