package engine

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	"github.com/flowrun/flow/engine/ledger"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// frame is where a visit runs: the chain of flows it is in, the memory
// scopes it can name, and the budgets above it.
type frame struct {
	rt    Runtime // the host's: budgets' meters take their locks from it
	calls *flows.Calls
	// scopes maps a memory scope name (an enclosing node's id, or "flow") to
	// its path, the key of its sessions and its home.
	scopes map[string]string
	// meters are the budgets above this point, outermost first.
	meters []*ledger.Meter
	// scope is the isolated scope this point is in, if any (docs/worktrees.md), and
	// dir the worktree a leaf works in once it is open: "" is the run's
	// working directory.
	scope  *worktrees.Scope
	dir    string
	branch string // the worktree's branch
	// gates are the places in the landing orders above this point.
	gates []worktrees.Gate
}

func (f *frame) inScope(sc *worktrees.Scope) *frame {
	cp := *f
	cp.scope, cp.dir, cp.branch = sc, "", ""
	return &cp
}

func (f *frame) withGate(o *worktrees.Order, i int) *frame {
	if o == nil {
		return f
	}
	cp := *f
	cp.gates = worktrees.With(f.gates, o, i)
	return &cp
}

func (f *frame) inDir(dir, branch string) *frame {
	cp := *f
	cp.dir, cp.branch = dir, branch
	return &cp
}

// workDir is where a leaf at this point works.
func (r *runner) workDir(fr *frame) string {
	if fr.dir != "" {
		return fr.dir
	}
	return r.rootDir
}

func (f *frame) withScope(id, path string) *frame {
	cp := *f
	cp.scopes = maps.Clone(f.scopes)
	cp.scopes[id] = path
	return &cp
}

// nested returns a copy of vars for a nested sequence, which adds its own
// nodes' values to it.
func nested(vars map[string]any) map[string]any { return maps.Clone(vars) }

func join(prefix, id string) string {
	if prefix == "" {
		return id
	}
	return prefix + "/" + id
}

// sequence runs nodes in order. vars is the sequence's own environment:
// each ended node is added to it by id.
func (r *runner) sequence(ctx context.Context, fr *frame, nodes []*flows.Node, vars map[string]any, prefix string) (any, *record.Failure) {
	var last any
	for _, n := range nodes {
		val, fail := r.visit(ctx, fr, n, vars, join(prefix, n.ID))
		vars[n.ID] = val
		last = val["output"]
		if fail != nil && (!n.Continue || parked(fail)) {
			return last, fail
		}
	}
	return last, nil
}

func (r *runner) dispatch(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	switch n.Kind {
	case schema.KindAgent:
		return r.agent(ctx, fr, n, vars, path)
	case schema.KindRun:
		return r.command(ctx, fr, n, vars, path)
	case schema.KindChoice:
		return r.choice(ctx, fr, n, vars, path)
	case schema.KindParallel:
		return r.parallel(ctx, fr, n, vars, path)
	case schema.KindMap:
		return r.mapNode(ctx, fr, n, vars, path)
	case schema.KindLoop:
		return r.loop(ctx, fr, n, vars, path)
	case schema.KindFlow:
		return r.call(ctx, fr, n, vars, path)
	case schema.KindAsk:
		return r.ask(ctx, n, vars, path)
	case schema.KindWait:
		return r.wait(ctx, n, vars, path)
	}
	return &outcome{fail: &record.Failure{Kind: schema.FailCondition, Message: "unknown node kind " + string(n.Kind)}}
}

// childFailure wraps the failure of a visit below path.
func childFailure(path string, cause *record.Failure) *record.Failure {
	return &record.Failure{Kind: schema.FailChild, Message: fmt.Sprintf("%s failed: %s: %s", cause.Visit, cause.Kind, cause.Root().Message), Visit: path, Cause: cause}
}

func (r *runner) choice(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	for _, b := range n.Branches() {
		if !b.Else {
			ok, err := evalBool(b.When, vars)
			if err != nil {
				return condition(err)
			}
			if !ok {
				continue
			}
		}
		out, fail := r.sequence(ctx, fr, b.Nodes, nested(vars), path)
		if fail != nil {
			return &outcome{output: out, fail: childFailure(path, fail)}
		}
		return &outcome{output: out}
	}
	return &outcome{skipped: true}
}

// block runs count tasks, at most limit at once (0: all at once), as a
// Runtime group. With failFast, the first failure cancels the others with
// cause errCancelled (a visit must tell `cancelled` from `stopped`), and
// tasks not started yet are skipped. Each task, skipped or not, finishes
// its place in ord (nil: the block lands nothing). It returns each task's
// failure by index.
func (r *runner) block(ctx context.Context, count, limit int, failFast bool, ord *worktrees.Order, task func(ctx context.Context, i int) *record.Failure) []*record.Failure {
	fails := make([]*record.Failure, count)
	var cause error
	if failFast {
		cause = errCancelled
	}
	started := make([]bool, count)
	r.rt.Group(ctx, count, limit, cause, func(ctx context.Context, i int) bool {
		started[i] = true
		defer ord.Finish(i)
		fails[i] = task(ctx, i)
		return fails[i] != nil
	})
	for i, ran := range started {
		if !ran { // skipped by fail_fast: tasks start in order, so no started one waits for it
			ord.Finish(i)
		}
	}
	return fails
}

// firstFailure is the failure of a block whose tasks failed: the first in
// order that caused the others, not a sibling it cancelled.
func firstFailure(path string, fails []*record.Failure) *record.Failure {
	var first *record.Failure
	for _, f := range fails {
		if f == nil {
			continue
		}
		if first == nil {
			first = f
		}
		if f.Root().Kind != schema.FailCancelled {
			return childFailure(path, f)
		}
	}
	if first != nil {
		return childFailure(path, first)
	}
	return nil
}

func (r *runner) parallel(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	outs := make([]any, len(n.Branches()))
	wts := make([]map[string]any, len(n.Branches()))
	ord := r.orderOf(n, len(n.Branches()))
	fails := r.block(ctx, len(n.Branches()), 0, n.FailFast(), ord, func(ctx context.Context, i int) *record.Failure {
		b := n.Branches()[i]
		bpath := join(path, b.Name)
		var fail *record.Failure
		outs[i], wts[i], fail = r.isolated(ctx, fr, n, vars, bpath, ord, i, func(fr *frame) (any, *record.Failure) {
			return r.sequence(ctx, fr, b.Nodes, nested(vars), bpath)
		})
		return fail
	})
	output := make(map[string]any, len(n.Branches()))
	worktrees := make(map[string]any, len(n.Branches()))
	for i, b := range n.Branches() {
		output[b.Name] = outs[i]
		worktrees[b.Name] = orNoWorktree(wts[i])
	}
	o := &outcome{output: output, fail: firstFailure(path, fails)}
	if n.Isolation {
		o.worktree = worktrees
	}
	return o
}

// orderOf is the landing order of a map or parallel visit, or nil when
// nothing below it is isolated.
func (r *runner) orderOf(n *flows.Node, count int) *worktrees.Order {
	if !n.Isolates {
		return nil
	}
	return r.wt.NewOrder(count)
}

// isolated runs item (or branch) i of a map or parallel at path, in its
// place in ord: in a scope of its own when the block is isolated, which
// lands in its turn. It returns the body's output, the scope's x.worktree
// (nil when the block is not isolated) and the failure.
func (r *runner) isolated(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string, ord *worktrees.Order, i int, body func(fr *frame) (any, *record.Failure)) (any, map[string]any, *record.Failure) {
	gfr := fr.withGate(ord, i)
	if !n.Isolation {
		out, fail := body(gfr)
		return out, nil, fail
	}
	sc, fail := r.scopeFor(gfr, n, vars, path)
	if fail != nil {
		fail.Visit = path
		return nil, flows.NoWorktree(), fail
	}
	out, fail := body(gfr.inScope(sc))
	wt, lfail := r.wt.EndScope(ctx, gfr.gates, !n.Continue, sc, fail == nil, path)
	if fail == nil && lfail != nil {
		lfail.Pos, fail = n.Pos, lfail
	}
	return out, wt, fail
}

func orNoWorktree(v map[string]any) map[string]any {
	if v == nil {
		return flows.NoWorktree()
	}
	return v
}

func (r *runner) mapNode(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	mn := n.AsMap()
	v, err := eval(mn.Items, vars)
	if err != nil {
		return condition(err)
	}
	items, ok := toList(v)
	if !ok {
		return condition(fmt.Errorf("map %s at %s gave %s, not a list", mn.Items.Source, mn.Items.Pos, schema.KindOf(v)))
	}
	if len(items) > mn.Max {
		return &outcome{fail: &record.Failure{Kind: schema.FailTooMany, Message: fmt.Sprintf("%d items, more than max %d; nothing ran", len(items), mn.Max)}}
	}
	results := make([]any, len(items))
	wts := make([]map[string]any, len(items))
	ord := r.orderOf(n, len(items))
	fails := r.block(ctx, len(items), mn.Concurrency, mn.FailFast, ord, func(ctx context.Context, i int) *record.Failure {
		iv := nested(vars)
		iv["item"], iv["index"] = items[i], i+1
		ipath := path + "[" + strconv.Itoa(i+1) + "]"
		out, wt, fail := r.isolated(ctx, fr, n, iv, ipath, ord, i, func(fr *frame) (any, *record.Failure) {
			return r.sequence(ctx, fr, mn.Body, iv, ipath)
		})
		results[i], wts[i] = map[string]any{"item": items[i], "ok": fail == nil, "output": out, "error": errorValue(fail)}, wt
		return fail
	})
	for i, res := range results {
		if res == nil { // skipped by fail_fast
			results[i] = map[string]any{"item": items[i], "ok": false, "output": nil,
				"error": map[string]any{"kind": string(schema.FailCancelled), "message": "skipped: a sibling failed first", "visit": path + "[" + strconv.Itoa(i+1) + "]"}}
		}
	}
	o := &outcome{output: results, fail: firstFailure(path, fails)}
	if n.Isolation {
		list := make([]any, len(items))
		for i, wt := range wts {
			list[i] = orNoWorktree(wt)
		}
		o.worktree = list
	}
	return o
}

func toList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case nil:
		return nil, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

func (r *runner) loop(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	ln := n.AsLoop()
	inner := fr.withScope(n.ID, path)
	previous := make(map[string]any, len(ln.Body))
	for _, b := range ln.Body {
		previous[b.ID] = nil
	}
	for i := 1; ; i++ {
		iv := nested(vars)
		iv[n.ID] = map[string]any{"previous": previous, "iteration": i}
		_, fail := r.sequence(ctx, inner, ln.Body, iv, path+"#"+strconv.Itoa(i))
		last := make(map[string]any, len(ln.Body))
		for _, b := range ln.Body {
			last[b.ID] = iv[b.ID]
		}
		output := func(converged bool) map[string]any {
			stop := "cap"
			if converged {
				stop = "until"
			}
			return map[string]any{"converged": converged, "stop": stop, "iterations": i, "last": last}
		}
		if fail != nil {
			return &outcome{output: output(false), fail: childFailure(path, fail)}
		}
		done, err := evalBool(ln.Until, iv)
		if err != nil {
			o := condition(err)
			o.output = output(false)
			return o
		}
		if done {
			return &outcome{output: output(true)}
		}
		if i >= ln.Max {
			return &outcome{output: output(false), fail: &record.Failure{Kind: schema.FailUnconverged, Message: fmt.Sprintf("until did not hold after %d iterations", ln.Max)}}
		}
		previous = last
	}
}

func (r *runner) call(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	cn := n.AsCall()
	callee := r.plan.Flows[cn.Callee]
	if callee == nil {
		// The loader puts every flow a node calls in the plan; a plan built
		// some other way fails this visit rather than the engine.
		return &outcome{fail: &record.Failure{Kind: schema.FailUnavailable, Message: fmt.Sprintf("flow %q is not in the plan", cn.Callee)}}
	}
	var in any
	if cn.Input != nil {
		v, err := eval(cn.Input, vars)
		if err != nil {
			return condition(err)
		}
		in = v
	}
	input, err := checkInput(callee, in, false)
	if err != nil {
		return condition(err)
	}
	inner := &frame{rt: fr.rt, calls: fr.calls.Call(callee), scopes: map[string]string{"flow": path}, meters: fr.meters,
		scope: fr.scope, dir: fr.dir, branch: fr.branch, gates: fr.gates}
	inner = inner.withBudget(callee.Budget, "flow "+callee.Name)
	out, fail := r.sequence(ctx, inner, callee.Nodes, map[string]any{"input": input}, path)
	if fail != nil {
		return &outcome{output: out, fail: childFailure(path, fail)}
	}
	return &outcome{output: out}
}
