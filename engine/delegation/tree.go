package delegation

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// NodePrefix names a child's node: delegate:scout.
const NodePrefix = "delegate:"

// Tree is one visit of a node that delegates, with every child below it:
// what they may do, and the budget they share.
type Tree struct {
	Spec *flows.Delegate
	Pos  schema.Pos // the delegating node's, where its children's failures point
	// unpriced is held by the tree's one child that runs before any turn
	// of the run could price it (see HoldUnpriced); holder is its path.
	unpriced Mutex
	mu       Locker
	holder   string
}

// NewTree is the tree of a delegating node's visit; unpriced and mu are
// the host's.
func NewTree(spec *flows.Delegate, pos schema.Pos, unpriced Mutex, mu Locker) *Tree {
	return &Tree{Spec: spec, Pos: pos, unpriced: unpriced, mu: mu}
}

// Parent is one visit of the tree that may start children: the node's
// visit (depth 0) or a child (depth 1 and down). It lives as long as the
// run does, so that its limits hold over the visit's whole life, its
// retries and a resume's calls included.
type Parent struct {
	Tree  *Tree
	Path  string
	Depth int

	mu       Locker
	started  int            // children started over the visit's life
	running  int            // children running now
	numbers  map[string]int // the last child number given, by agent
	repeats  map[[2]string]int
	recorded []Child // children an earlier attempt started, in order
}

// NewParent is the visit at path of tree, at depth, with the children
// earlier attempts recorded under it (Registry.Earlier); mu is the host's.
func NewParent(tree *Tree, path string, depth int, earlier []Child, mu Locker) *Parent {
	p := &Parent{Tree: tree, Path: path, Depth: depth, mu: mu, numbers: map[string]int{}, repeats: map[[2]string]int{}}
	seen := map[string]bool{}
	for _, c := range earlier {
		if seen[c.Path] {
			continue
		}
		seen[c.Path] = true
		p.recorded = append(p.recorded, c)
		p.started++
		if n := childNumber(c.Path); n > p.numbers[c.Agent] {
			p.numbers[c.Agent] = n
		}
	}
	return p
}

// CanDelegate says whether the visit's turns may start children: it is
// above the tree's depth.
func (p *Parent) CanDelegate() bool { return p.Depth < p.Tree.Spec.MaxDepth }

// childNumber is the n of a child's path …/delegate:agent#n.
func childNumber(path string) int {
	i := strings.LastIndexByte(path, '#')
	n, _ := strconv.Atoi(path[i+1:])
	return n
}

// Take books a child of p for a call of agent with task: the ended or
// started child an earlier attempt recorded for the same agent and task
// (the nth repeat of a call is the nth such child), else a new one within
// max_children and concurrency, if affords says nothing against it. It
// returns the child's path, or the refusal; a child booked is ended by
// Done.
func (p *Parent) Take(agent, task string, affords func() string) (path, refusal string) {
	spec := p.Tree.Spec
	p.mu.Lock()
	defer p.mu.Unlock()
	key := [2]string{agent, task}
	nth := p.repeats[key]
	for _, c := range p.recorded {
		if c.Agent != agent || c.Task != task {
			continue
		}
		if nth == 0 {
			p.repeats[key]++
			p.running++
			return c.Path, ""
		}
		nth--
	}
	if p.started >= spec.MaxChildren {
		return "", fmt.Sprintf("refused: max_children is %d, and %s has started %d children", spec.MaxChildren, p.Path, p.started)
	}
	if p.running >= spec.Concurrency {
		return "", fmt.Sprintf("refused: concurrency is %d, and %s has %d children running", spec.Concurrency, p.Path, p.running)
	}
	if why := affords(); why != "" {
		return "", "refused: " + why
	}
	p.repeats[key]++
	p.started++
	p.running++
	p.numbers[agent]++
	return fmt.Sprintf("%s/%s%s#%d", p.Path, NodePrefix, agent, p.numbers[agent]), ""
}

// Done ends a child Take booked.
func (p *Parent) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
}

// HoldUnpriced keeps a tree under a budget (budgeted) to one child that
// nothing can price yet: before any turn of the run ended, a child
// reserves all that is left, so a sibling's call would find nothing left.
// It waits instead, for the unpriced child to end and price it. A call
// from that child's own subtree does not wait (it would wait on itself):
// the budget refuses it. held says the call of p holds the tree's
// unpriced turn, which ReleaseUnpriced gives back; Hold names the child
// that holds it.
func (p *Parent) HoldUnpriced(ctx context.Context, budgeted bool, priced func() bool) (held bool, err error) {
	if !budgeted || priced() {
		return false, nil
	}
	t := p.Tree
	t.mu.Lock()
	holder := t.holder
	t.mu.Unlock()
	if holder != "" && strings.HasPrefix(p.Path+"/", holder) {
		return false, nil
	}
	if err := t.unpriced.Lock(ctx); err != nil {
		return false, err
	}
	if priced() {
		t.unpriced.Unlock()
		return false, nil
	}
	return true, nil
}

// Hold names the child at path as the holder of the tree's unpriced turn.
func (t *Tree) Hold(path string) {
	t.mu.Lock()
	t.holder = path + "/" // the child's subtree: its paths start so
	t.mu.Unlock()
}

// ReleaseUnpriced gives back the tree's unpriced turn.
func (t *Tree) ReleaseUnpriced() {
	t.mu.Lock()
	t.holder = ""
	t.mu.Unlock()
	t.unpriced.Unlock()
}
