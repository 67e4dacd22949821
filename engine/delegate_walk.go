package engine

import (
	"context"
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"strconv"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// The walker's side of delegation (docs/delegation.md): a turn whose node
// delegates is served by the host's Delegator, and every call is decided
// here — its limits, its budget, the child's visit — and answered with the
// child's answer or why there is none.

// delegTree is one visit of a node that delegates, with every child below
// it: what they may do, and the budget they share.
type delegTree struct {
	spec *flows.Delegate
	pos  schema.Pos // the delegating node's, where its children's failures point
	// unpriced is held by the tree's one child that runs before any turn
	// of the run could price it (see unpricedTurn); holder is its path.
	unpriced Mutex
	mu       Locker
	holder   string
}

// delegator is one visit of the tree that may start children: the node's
// visit (depth 0) or a child (depth 1 and down). It lives as long as the
// run does, so that its limits hold over the visit's whole life, its
// retries and a resume's calls included.
type delegator struct {
	tree  *delegTree
	path  string
	depth int
	// kids is the frame the children run in: the visit's own, out of any
	// worktree scope (they work in the same directory), with the tree's
	// budget among its meters.
	kids *frame

	mu       Locker
	started  int            // children started over the visit's life
	running  int            // children running now
	numbers  map[string]int // the last child number given, by agent
	repeats  map[[2]string]int
	recorded []earlierChild // children an earlier attempt started, in order
}

// earlierChild is a child an earlier attempt of the run started.
type earlierChild struct {
	path, agent, task string
}

// delegParentStart holds what a child's start fact records: its parent
// and its task.
type delegParentStart struct {
	parent, task string
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
		tree := &delegTree{spec: an.Delegate, pos: n.Pos, unpriced: r.rt.NewMutex(), mu: r.rt.NewLock()}
		kids := *fr
		kids.scope, kids.gates = nil, nil
		d = &delegator{tree: tree, path: path, kids: kids.withBudget(an.Delegate.Budget, path+" (delegate)")}
		d.init(r)
		r.delegators[path] = d
	}
	if d.depth >= d.tree.spec.MaxDepth {
		return nil
	}
	return d
}

// init gives d its locks and what earlier attempts recorded under it.
// Called with r.mu held.
func (d *delegator) init(r *runner) {
	d.mu = r.rt.NewLock()
	d.numbers, d.repeats = map[string]int{}, map[[2]string]int{}
	seen := map[string]bool{}
	for _, c := range r.earlierKids[d.path] {
		if seen[c.path] {
			continue
		}
		seen[c.path] = true
		d.recorded = append(d.recorded, c)
		d.started++
		if n := childNumber(c.path); n > d.numbers[c.agent] {
			d.numbers[c.agent] = n
		}
	}
}

// childNumber is the n of a child's path …/delegate:agent#n.
func childNumber(path string) int {
	i := strings.LastIndexByte(path, '#')
	n, _ := strconv.Atoi(path[i+1:])
	return n
}

// replayChild indexes a child's start fact of an earlier attempt under its
// parent. Called from replay, before the walk.
func (r *runner) replayChild(f *Fact) {
	if f.Type != record.FactStart || f.Parent == "" {
		return
	}
	task, _ := f.Input.(string)
	agent := strings.TrimPrefix(f.Node, delegNodePrefix)
	r.earlierKids[f.Parent] = append(r.earlierKids[f.Parent], earlierChild{path: f.Visit, agent: agent, task: task})
}

// delegNodePrefix names a child's node: delegate:scout.
const delegNodePrefix = "delegate:"

// serve opens the delegation of one turn of d's visit; slot is the turn's
// place under the run's cap on live turns, which it lends to its children
// while it waits for them.
func (r *runner) serve(ctx context.Context, d *delegator, slot *liveSlot, ts *turnStop) (*Delegation, func(), *Failure) {
	del, closeFn, err := r.delegates.Serve(ctx, d.path, func(ctx context.Context, req DelegateRequest) DelegateReply {
		reply := r.delegate(ctx, d, slot, req)
		if ts.afterCall() {
			reply = DelegateReply{Error: "the turn was stopped: nothing is left of its budget (" + reply.Error + ")"}
		}
		return reply
	})
	if err != nil {
		return nil, nil, &Failure{Kind: schema.FailUnavailable, Message: "opening the turn's delegation: " + err.Error()}
	}
	del.Agents = d.tree.spec.Agents
	return del, closeFn, nil
}

// delegate decides one call: a refusal names the limit and its value and
// starts nothing; else the child runs as a visit of the run, and its
// answer, or its failure, is the reply.
func (r *runner) delegate(ctx context.Context, d *delegator, slot *liveSlot, req DelegateRequest) DelegateReply {
	spec := d.tree.spec
	a := r.plan.Agents[req.Agent]
	if a == nil || !contains(spec.Agents, req.Agent) {
		return DelegateReply{Error: fmt.Sprintf("refused: %q is not an agent this turn may delegate to (%s)", req.Agent, strings.Join(spec.Agents, ", "))}
	}
	if strings.TrimSpace(req.Task) == "" {
		return DelegateReply{Error: "refused: the task is empty"}
	}
	held, err := r.unpricedTurn(ctx, d, req.Agent)
	if err != nil {
		return DelegateReply{Error: "the call was withdrawn: " + err.Error()}
	}
	if held {
		defer d.tree.releaseUnpriced()
	}
	path, refusal := d.take(req, func() string { return r.affords(d.kids, req.Agent) })
	if refusal != "" {
		return DelegateReply{Error: refusal}
	}
	defer d.done()
	if held {
		d.tree.mu.Lock()
		d.tree.holder = path + "/" // the child's subtree: its paths start so
		d.tree.mu.Unlock()
	}
	r.mu.Lock()
	r.childStarts[path] = delegParentStart{parent: d.path, task: req.Task}
	child := r.delegators[path]
	if child == nil {
		child = &delegator{tree: d.tree, path: path, depth: d.depth + 1, kids: d.kids}
		child.init(r)
		r.delegators[path] = child
	}
	r.mu.Unlock()
	n := &flows.Node{ID: delegNodePrefix + a.Name, Kind: schema.KindAgent, Pos: d.tree.pos, Output: schema.StringType,
		Continue: true, Spec: &flows.AgentNode{Agent: a, Prompt: &flows.Template{Source: req.Task, Parts: []flows.TemplatePart{{Text: req.Task}}},
			Delegate: spec}}
	slot.lend()
	v, fail := r.visit(ctx, d.kids, n, nil, path)
	slot.reclaim(ctx)
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

// take books a child of d for req: the ended or started child an earlier
// attempt recorded for the same agent and task (the nth repeat of a call
// is the nth such child), else a new one within max_children and
// concurrency. It returns the child's path, or the refusal.
func (d *delegator) take(req DelegateRequest, affords func() string) (path, refusal string) {
	spec := d.tree.spec
	d.mu.Lock()
	defer d.mu.Unlock()
	key := [2]string{req.Agent, req.Task}
	nth := d.repeats[key]
	for _, c := range d.recorded {
		if c.agent != req.Agent || c.task != req.Task {
			continue
		}
		if nth == 0 {
			d.repeats[key]++
			d.running++
			return c.path, ""
		}
		nth--
	}
	if d.started >= spec.MaxChildren {
		return "", fmt.Sprintf("refused: max_children is %d, and %s has started %d children", spec.MaxChildren, d.path, d.started)
	}
	if d.running >= spec.Concurrency {
		return "", fmt.Sprintf("refused: concurrency is %d, and %s has %d children running", spec.Concurrency, d.path, d.running)
	}
	if why := affords(); why != "" {
		return "", "refused: " + why
	}
	d.repeats[key]++
	d.started++
	d.running++
	d.numbers[req.Agent]++
	return fmt.Sprintf("%s/%s%s#%d", d.path, delegNodePrefix, req.Agent, d.numbers[req.Agent]), ""
}

func (d *delegator) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running--
}

// childStart is what the start fact of the visit at path records when it
// is a delegated child: its parent's visit and its task.
func (r *runner) childStart(s *record.VisitStarted) {
	if r.delegates == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.childStarts[s.Visit]; ok {
		s.Parent, s.Input = c.parent, c.task
	}
}

// isChild reports whether the visit at path is a delegated child.
func (r *runner) isChild(path string) bool {
	if r.delegates == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.childStarts[path]
	return ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// delegatingNode is a node of p that delegates, or nil.
func delegatingNode(p *flows.Plan) *flows.Node {
	var found *flows.Node
	for _, f := range flowsInOrder(p) {
		flows.EachNode(f.Nodes, func(n *flows.Node) {
			if an := n.AsAgent(); found == nil && an != nil && an.Delegate != nil {
				found = n
			}
		})
	}
	return found
}

// liveSlot is one turn's place under the run's cap on live turns. A turn
// waiting on its children lends them its place: it holds none while one
// of its calls is running, and takes one again when the last ends.
type liveSlot struct {
	live Semaphore
	mu   Locker
	held bool
	lent int
}

func (r *runner) takeLive(ctx context.Context) (*liveSlot, error) {
	if err := r.live.Acquire(ctx); err != nil {
		return nil, err
	}
	return &liveSlot{live: r.live, mu: r.rt.NewLock(), held: true}, nil
}

func (s *liveSlot) lend() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lent++
	if s.held {
		s.held = false
		s.live.Release()
	}
}

func (s *liveSlot) reclaim(ctx context.Context) {
	s.mu.Lock()
	s.lent--
	last := s.lent == 0
	s.mu.Unlock()
	if !last || s.live.Acquire(ctx) != nil {
		return // another call still runs, or the turn is ending anyway
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lent > 0 || s.held {
		s.live.Release()
		return
	}
	s.held = true
}

func (s *liveSlot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.held = false
		s.live.Release()
	}
}

// affords says why a child of agent could not start under the budgets of
// fr, or "": what a turn of it would reserve is reserved and given back,
// so that a call the budget refuses starts no visit. The child's own
// turn books again, atomically, as it starts.
func (r *runner) affords(fr *frame, agent string) string {
	want, floor, priced := r.ledger.price(agent)
	h := &hold{visit: "a delegate call", priced: priced, blind: !priced, mu: r.rt.NewLock()}
	for i, m := range fr.meters {
		if why := m.reserve(h, want, floor); why != "" {
			for _, booked := range fr.meters[:i] {
				booked.settle(h, nil)
			}
			return why
		}
	}
	for _, m := range fr.meters {
		m.settle(h, nil)
	}
	return ""
}

// unpricedTurn keeps a tree under a budget to one child that nothing can
// price yet: before any turn of the run ended, a child reserves all that
// is left (book), so a sibling's call would find nothing left. It waits
// instead, for the unpriced child to end and price it. A call from that
// child's own subtree does not wait (it would wait on itself): the
// budget refuses it. held says the call holds the tree's unpriced turn,
// which releaseUnpriced gives back.
func (r *runner) unpricedTurn(ctx context.Context, d *delegator, agent string) (held bool, err error) {
	if len(d.kids.meters) == 0 {
		return false, nil
	}
	if _, _, priced := r.ledger.price(agent); priced {
		return false, nil
	}
	t := d.tree
	t.mu.Lock()
	holder := t.holder
	t.mu.Unlock()
	if holder != "" && strings.HasPrefix(d.path+"/", holder) {
		return false, nil
	}
	if err := t.unpriced.Lock(ctx); err != nil {
		return false, err
	}
	if _, _, priced := r.ledger.price(agent); priced {
		t.unpriced.Unlock()
		return false, nil
	}
	return true, nil
}

func (t *delegTree) releaseUnpriced() {
	t.mu.Lock()
	t.holder = ""
	t.mu.Unlock()
	t.unpriced.Unlock()
}
