package reuse

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flowrun/flow/flows"
)

// Reach says which visits a fork point reaches (docs/fork-and-diff.md): the
// point itself and what is inside it, and every visit the walk comes to
// after it — later nodes of its sequence and of every enclosing one, later
// iterations of its loops — but not the other items of its maps nor the
// other branches of its parallels, which run beside it. What a visit reads
// is not enough to tell: agents and commands also meet through the files
// of the working directory, which no `reads` names.
type Reach struct {
	plan *flows.Plan
	at   []step
}

// step is where one segment of a visit path sits in the plan: the node's
// index in its sequence, its loop iteration or map item (from 1; 0 for
// none), and the branch taken below it (-1 for none).
type step struct {
	index, iter, item, branch int
	parallel                  bool
}

// NewReach resolves the fork point at, a visit path of plan; a path that
// names no node of the plan is an error.
func NewReach(plan *flows.Plan, at string) (*Reach, error) {
	steps, _, ok := resolve(plan, at)
	if !ok {
		return nil, fmt.Errorf("%s is not a visit of flow %s: give a visit path as flow show prints it (e.g. review#2/verdict, look[3]/scout)", at, plan.Root.Name)
	}
	return &Reach{plan: plan, at: steps}, nil
}

// Reaches reports whether the fork point reaches visit. A visit the plan
// cannot place (a flow file changed with --file) is reached: it runs.
func (r *Reach) Reaches(visit string) bool {
	v, _, ok := resolve(r.plan, visit)
	if !ok {
		return true
	}
	for k := 0; k < len(r.at) && k < len(v); k++ {
		a, b := r.at[k], v[k]
		switch {
		case a.index != b.index:
			return b.index > a.index
		case a.iter != b.iter:
			return b.iter > a.iter
		case a.item != b.item:
			return false // another item of the same map
		case a.branch != b.branch:
			return !a.parallel // another branch of a parallel runs beside it; of a choice, after it
		}
	}
	return true // the point itself, inside it, or a block around it
}

// NodeAt is the node of plan a visit path is a visit of; nil when the
// path names none, or names a delegated child.
func NodeAt(plan *flows.Plan, path string) *flows.Node {
	_, n, ok := resolve(plan, path)
	if !ok || strings.Contains(path, "/"+delegNodePrefix) {
		return nil
	}
	return n
}

// resolve places each segment of a visit path in the plan, and returns
// the node of its last. A delegated child (lead/delegate:scout#1) is
// placed where its parent is: it is part of its parent's turn.
func resolve(plan *flows.Plan, path string) ([]step, *flows.Node, bool) {
	seq := plan.Root.Nodes
	segs := strings.Split(path, "/")
	var steps []step
	var last *flows.Node
	for i := 0; i < len(segs); i++ {
		if strings.HasPrefix(segs[i], delegNodePrefix) {
			break
		}
		id, iter, item := segment(segs[i])
		n, idx := find(seq, id)
		if n == nil {
			return nil, nil, false
		}
		last = n
		st := step{index: idx, iter: iter, item: item, branch: -1}
		switch {
		case n.AsParallel() != nil:
			st.parallel = true
			if i+1 < len(segs) {
				i++
				st.branch, seq = branchNamed(n.Branches(), segs[i])
				if seq == nil {
					return nil, nil, false
				}
			}
		case n.AsChoice() != nil:
			if i+1 < len(segs) {
				next, _, _ := segment(segs[i+1])
				st.branch, seq = branchHolding(n.Branches(), next)
			}
		case n.AsCall() != nil:
			if f := plan.Flows[n.AsCall().Callee]; f != nil {
				seq = f.Nodes
			}
		default:
			seq = n.Body()
		}
		steps = append(steps, st)
	}
	return steps, last, len(steps) > 0
}

// segment splits a path segment into its node id and its loop iteration
// (review#2) or map item (look[3]).
func segment(s string) (id string, iter, item int) {
	if i := strings.LastIndexByte(s, '#'); i > 0 {
		if n, err := strconv.Atoi(s[i+1:]); err == nil {
			return s[:i], n, 0
		}
	}
	if strings.HasSuffix(s, "]") {
		if i := strings.LastIndexByte(s, '['); i > 0 {
			if n, err := strconv.Atoi(s[i+1 : len(s)-1]); err == nil {
				return s[:i], 0, n
			}
		}
	}
	return s, 0, 0
}

func find(seq []*flows.Node, id string) (*flows.Node, int) {
	for i, n := range seq {
		if n.ID == id {
			return n, i
		}
	}
	return nil, -1
}

func branchNamed(bs []*flows.Branch, name string) (int, []*flows.Node) {
	for i, b := range bs {
		if b.Name == name {
			return i, b.Nodes
		}
	}
	return -1, nil
}

// branchHolding is the choice branch whose sequence holds node id.
func branchHolding(bs []*flows.Branch, id string) (int, []*flows.Node) {
	for i, b := range bs {
		if n, _ := find(b.Nodes, id); n != nil {
			return i, b.Nodes
		}
	}
	return -1, nil
}
