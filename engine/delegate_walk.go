package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flowrun/flow/engine/delegation"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// The walker's side of delegation (docs/delegation.md): a turn whose node
// delegates is served by the host's Delegator, and every call is decided
// here — its limits (package engine/delegation), its budget, the child's
// visit — and answered with the child's answer or why there is none.

// delegator is one visit of a delegating tree that may start children
// (delegation.Parent), with the frame its children run in: the visit's
// own, out of any worktree scope (they work in the same directory), with
// the tree's budget among its meters.
type delegator struct {
	*delegation.Parent
	kids *frame
}

// delegation is the delegator of the visit at path of n, or nil when the
// turn may not delegate: n gives no delegate:, the host cannot serve one,
// or the visit is a child at the tree's depth.
func (r *runner) delegation(fr *frame, n *flows.Node, path string) *delegator {
	an := n.AsAgent()
	if an == nil || an.Delegate == nil || r.delegates == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.delegators[path]
	if d == nil {
		tree := delegation.NewTree(an.Delegate, n.Pos, r.rt.NewMutex(), r.rt.NewLock())
		kids := *fr
		kids.scope, kids.gates = nil, nil
		d = &delegator{Parent: delegation.NewParent(tree, path, 0, r.children.Earlier(path), r.rt.NewLock()),
			kids: kids.withBudget(an.Delegate.Budget, path+" (delegate)")}
		r.delegators[path] = d
	}
	if !d.CanDelegate() {
		return nil
	}
	return d
}

// serve opens the delegation of one turn of d's visit; slot is the turn's
// place under the run's cap on live turns, which it lends to its children
// while it waits for them.
func (r *runner) serve(ctx context.Context, d *delegator, slot *delegation.Slot, ts *turnStop) (*Delegation, func(), *record.Failure) {
	del, closeFn, err := r.delegates.Serve(ctx, d.Path, func(ctx context.Context, req DelegateRequest) DelegateReply {
		reply := r.delegate(ctx, d, slot, req)
		if ts.afterCall() {
			reply = DelegateReply{Error: "the turn was stopped: nothing is left of its budget (" + reply.Error + ")"}
		}
		return reply
	})
	if err != nil {
		return nil, nil, &record.Failure{Kind: schema.FailUnavailable, Message: "opening the turn's delegation: " + err.Error()}
	}
	del.Agents, del.Restart = d.Tree.Spec.Agents, d.Restart
	return del, closeFn, nil
}

// delegate decides one call: a refusal names the limit and its value and
// starts nothing; else the child runs as a visit of the run, and its
// answer, or its failure, is the reply.
func (r *runner) delegate(ctx context.Context, d *delegator, slot *delegation.Slot, req DelegateRequest) DelegateReply {
	spec := d.Tree.Spec
	a := r.plan.Agents[req.Agent]
	if a == nil || !slices.Contains(spec.Agents, req.Agent) {
		return DelegateReply{Error: fmt.Sprintf("refused: %q is not an agent this turn may delegate to (%s)", req.Agent, strings.Join(spec.Agents, ", "))}
	}
	if strings.TrimSpace(req.Task) == "" {
		return DelegateReply{Error: "refused: the task is empty"}
	}
	held, err := d.HoldUnpriced(ctx, len(d.kids.meters) > 0, func() bool { return r.ledger.Priced(req.Agent) })
	if err != nil {
		return DelegateReply{Error: "the call was withdrawn: " + err.Error()}
	}
	if held {
		defer d.Tree.ReleaseUnpriced()
	}
	path, refusal := d.Take(req.Agent, req.Task, func() string { return r.ledger.Affords(d.kids.meters, req.Agent) })
	if refusal != "" {
		return DelegateReply{Error: refusal}
	}
	defer d.Done()
	if a, ok := d.Answered(path); ok {
		return DelegateReply{Answer: a.Text, Error: a.Error} // run already by an earlier turn of this attempt
	}
	if held {
		d.Tree.Hold(path)
	}
	r.childOf(d, path, req.Task)
	n := &flows.Node{ID: delegation.NodePrefix + a.Name, Kind: schema.KindAgent, Pos: d.Tree.Pos, Output: schema.StringType,
		Continue: true, Spec: &flows.AgentNode{Agent: a, Prompt: &flows.Template{Source: req.Task, Parts: []flows.TemplatePart{{Text: req.Task}}},
			Delegate: spec}}
	slot.Lend()
	v, fail := r.visit(ctx, d.kids, n, nil, path)
	slot.Reclaim(ctx)
	r.infra.Note(d.Path, path, fail)
	reply := answerOf(path, v, fail)
	d.Keep(path, req.Agent, req.Task, delegation.Answer{Text: reply.Answer, Error: reply.Error})
	return reply
}

// childOf records the child at path of d, for task: what its start fact
// says, and its own delegator one level down.
func (r *runner) childOf(d *delegator, path, task string) {
	r.children.Started(path, d.Path, task)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.delegators[path] == nil {
		r.delegators[path] = &delegator{Parent: delegation.NewParent(d.Tree, path, d.Depth+1, r.children.Earlier(path), r.rt.NewLock()), kids: d.kids}
	}
}

// answerOf is the reply of a child's visit at path: its answer, or its
// failure.
func answerOf(path string, v map[string]any, fail *record.Failure) DelegateReply {
	if fail != nil {
		// Bounded as an answer is: a failure's message may hold a
		// program's output.
		return DelegateReply{Error: UTF8Prefix(fmt.Sprintf("the child %s failed (%s): %s", path, fail.Kind, fail.Message), AnswerLimit)}
	}
	answer := text(v["output"])
	if file, _ := v["_file"].(string); file != "" {
		answer += fmt.Sprintf("\n\n[the answer goes on: %d bytes in all, in %s]", v["_size"], file)
	}
	return DelegateReply{Answer: answer}
}

// childStart is what the start fact of the visit at path records when it
// is a delegated child: its parent's visit and its task.
func (r *runner) childStart(s *record.VisitStarted) {
	if r.delegates != nil {
		r.children.ChildStart(s)
	}
}

// mayDelegate reports whether the turn at path may start children.
func (r *runner) mayDelegate(path string) bool {
	if r.delegates == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.delegators[path]
	return d != nil && d.CanDelegate()
}

// isChild reports whether the visit at path is a delegated child.
func (r *runner) isChild(path string) bool {
	return r.delegates != nil && r.children.IsChild(path)
}

// takeLive waits for the turn's place under the run's cap on live turns.
func (r *runner) takeLive(ctx context.Context) (*delegation.Slot, error) {
	return delegation.TakeSlot(ctx, r.live, r.rt.NewLock())
}
