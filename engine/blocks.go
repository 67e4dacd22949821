package engine

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/expr-lang/expr/vm"
	"github.com/sourcegraph/conc/pool"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// frame is the flow being run at some depth: the root, or a called flow.
type frame struct {
	flow   *flows.Flow
	parent *frame
	// scopes maps a memory scope name (an enclosing node's id, or "flow") to
	// its path, the key of its sessions and its home.
	scopes map[string]string
	// meters are the budgets above this point, outermost first.
	meters []*meter
}

func (f *frame) withScope(id, path string) *frame {
	cp := *f
	cp.scopes = maps.Clone(f.scopes)
	cp.scopes[id] = path
	return &cp
}

// outcome is what one visit produced.
type outcome struct {
	output   any
	skipped  bool
	fail     *Failure
	usage    *Usage
	model    string
	timeout  time.Duration // an agent turn's resolved timeout
	attempts int
	session  string
	scope    string // the memory scope's session key
	file     string // where an oversized answer was written
}

// nested returns the environment of a nested sequence: a copy of vars with
// room for the entries the sequence adds, so that it does not grow.
func nested(vars map[string]any, adds int) map[string]any {
	m := make(map[string]any, len(vars)+adds)
	maps.Copy(m, vars)
	return m
}

func join(prefix, id string) string {
	if prefix == "" {
		return id
	}
	return prefix + "/" + id
}

// sequence runs nodes in order. vars is the sequence's own environment:
// each ended node is added to it by id.
func (r *runner) sequence(ctx context.Context, fr *frame, nodes []*flows.Node, vars map[string]any, prefix string) (any, *Failure) {
	var last any
	for _, n := range nodes {
		path := join(prefix, n.ID)
		val, fail := r.visit(ctx, fr, n, vars, path)
		vars[n.ID] = val
		last = val["output"]
		if fail != nil && !n.Continue {
			return last, fail
		}
	}
	return last, nil
}

// visit runs one node and journals its start and end.
func (r *runner) visit(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) (map[string]any, *Failure) {
	if o, ok := r.replayed(n, path); ok {
		if isLeaf(n) {
			fr.charge(o.usage)
		}
		return nodeValue(o)
	}
	if prev := r.ended[path]; prev != nil && isLeaf(n) {
		fr.charge(prev.Usage) // an earlier attempt's spending counts
	}
	fr = fr.withBudget(n.Budget, path)
	start := time.Now()
	row, err := r.store.begin(start, n, path, isLeaf(n) || n.Kind == schema.KindAsk)
	if err != nil {
		return nodeValue(&outcome{fail: &Failure{Kind: schema.FailUnavailable, Message: err.Error(), Visit: path, Pos: n.Pos}})
	}
	r.emit(&Event{Time: start, Type: "visit.start", Visit: path, Node: n.ID, Kind: string(n.Kind)})
	var o *outcome
	if err := ctx.Err(); err != nil {
		o = &outcome{fail: cancelled(ctx, path)}
	} else {
		o = r.dispatch(ctx, fr, n, vars, path)
	}
	if o.fail != nil && o.fail.Visit == "" {
		o.fail.Visit = path
	}
	if o.fail != nil && o.fail.Visit == path && !o.fail.Pos.IsValid() {
		o.fail.Pos = n.Pos
	}
	end := time.Now()
	wall := end.Sub(start).Milliseconds()
	ok := o.fail == nil
	// A leaf's output is journaled whole: it cannot be had again without
	// running it. A block's output is built from its children's, so it is
	// not written twice; a resume rebuilds it by replaying the block.
	var recorded any
	if isLeaf(n) || n.Kind == schema.KindAsk {
		recorded = o.output
	}
	f := &Fact{Type: "end", Time: end, Visit: path, Node: n.ID, Kind: string(n.Kind), OK: boolRef(ok), Output: recorded, Error: o.fail,
		Skipped: o.skipped, Usage: o.usage, Model: o.model, Attempts: o.attempts, Session: o.session, Scope: o.scope, WallMS: wall}
	if o.timeout > 0 {
		f.Timeout = durationText(o.timeout)
	}
	if err := r.store.end(row, f); err != nil && o.fail == nil {
		o.fail = &Failure{Kind: schema.FailUnavailable, Message: err.Error(), Visit: path, Pos: n.Pos}
	}
	r.emit(&Event{Time: end, Type: "visit.end", Visit: path, Node: n.ID, Kind: string(n.Kind), OK: boolRef(ok), Error: o.fail, Usage: o.usage, Model: o.model, WallMS: wall})
	return nodeValue(o)
}

// boolRef points at a shared true or false: facts and events are never
// changed once made, and a visit's end need not allocate its ok.
func boolRef(b bool) *bool {
	if b {
		return &trueValue
	}
	return &falseValue
}

var trueValue, falseValue = true, false

func isLeaf(n *flows.Node) bool { return n.Kind == schema.KindAgent || n.Kind == schema.KindRun }

func nodeValue(o *outcome) (map[string]any, *Failure) {
	v := map[string]any{"ok": o.fail == nil, "output": o.output, "error": o.fail.value(), "skipped": o.skipped}
	if o.file != "" {
		v["_file"] = o.file
	}
	return v, o.fail
}

func (r *runner) dispatch(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	switch n.Kind {
	case schema.KindAgent:
		return r.agent(ctx, fr, n, vars, path)
	case schema.KindRun:
		return r.command(ctx, n, vars, path)
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
		return r.ask(ctx, n, path)
	}
	return &outcome{fail: &Failure{Kind: schema.FailCondition, Message: "unknown node kind " + string(n.Kind)}}
}

// childFailure wraps the failure of a visit below path.
func childFailure(path string, cause *Failure) *Failure {
	return &Failure{Kind: schema.FailChild, Message: fmt.Sprintf("%s failed: %s: %s", cause.Visit, cause.Kind, innermost(cause).Message), Visit: path, Cause: cause}
}

func innermost(f *Failure) *Failure {
	for f.Cause != nil {
		f = f.Cause
	}
	return f
}

// vms are expr's machines, kept between evaluations: a new one allocates
// its stack for every guard and template.
var vms = sync.Pool{New: func() any { return new(vm.VM) }}

func eval(e *flows.Expr, vars map[string]any) (any, error) {
	if v, ok := walkPath(e.Path, vars); ok {
		return v, nil
	}
	return run(e, vars)
}

// walkPath looks a plain path up through nested maps, as expr's machine
// would; it reports false when path is nil or a value on the way is not a
// map, which the machine then reports (or handles) itself. Most templates
// and many guards are a plain path, and walking it costs a few map
// lookups where starting the machine cost a fifth of a microsecond.
func walkPath(path []string, vars map[string]any) (any, bool) {
	if path == nil {
		return nil, false
	}
	var v any = vars
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v = m[name]
	}
	return v, true
}

// run evaluates e on expr's machine.
func run(e *flows.Expr, vars map[string]any) (any, error) {
	m := vms.Get().(*vm.VM)
	out, err := m.Run(e.Program, vars)
	clear(m.Stack[:cap(m.Stack)]) // let go of the values, now and in the pool
	clear(m.Variables)
	vms.Put(m)
	if err != nil {
		return nil, fmt.Errorf("evaluating %s at %s: %w", e.Source, e.Pos, err)
	}
	return out, nil
}

func evalBool(e *flows.Expr, vars map[string]any) (bool, error) {
	if v, ok := walkPath(e.Path, vars); ok {
		if b, ok := v.(bool); ok {
			return b, nil
		}
	}
	v, err := run(e, vars) // which says what is wrong with a value that is not a boolean
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s at %s gave %T, not a boolean", e.Source, e.Pos, v)
	}
	return b, nil
}

func condition(err error) *outcome {
	return &outcome{fail: &Failure{Kind: schema.FailCondition, Message: err.Error()}}
}

func (r *runner) choice(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	for _, b := range n.Branches {
		if !b.Else {
			ok, err := evalBool(b.When, vars)
			if err != nil {
				return condition(err)
			}
			if !ok {
				continue
			}
		}
		out, fail := r.sequence(ctx, fr, b.Nodes, nested(vars, len(b.Nodes)), path)
		if fail != nil {
			return &outcome{output: out, fail: childFailure(path, fail)}
		}
		return &outcome{output: out}
	}
	return &outcome{skipped: true}
}

// block runs n tasks with at most limit at once (0 = all at once). With
// failFast, the first failure cancels the others with cause errCancelled and
// tasks not yet started are skipped. It returns each task's failure by index.
func (r *runner) block(ctx context.Context, count, limit int, failFast bool, task func(ctx context.Context, i int) *Failure) []*Failure {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fails := make([]*Failure, count)
	if limit <= 0 || limit > count {
		limit = count
	}
	// limit workers take the tasks in order, each the next one not taken:
	// no goroutine per task, and no hand-over of each task to a worker.
	var next atomic.Int64
	p := pool.New()
	for range limit {
		p.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count || failFast && ctx.Err() != nil {
					return
				}
				if f := task(ctx, i); f != nil {
					fails[i] = f
					if failFast {
						cancel(errCancelled)
					}
				}
			}
		})
	}
	p.Wait()
	return fails
}

func firstFailure(path string, fails []*Failure) *Failure {
	// Prefer the failure that caused the others (not a cancelled sibling).
	var first *Failure
	for _, f := range fails {
		if f == nil {
			continue
		}
		if first == nil {
			first = f
		}
		if innermost(f).Kind != schema.FailCancelled {
			return childFailure(path, f)
		}
	}
	if first != nil {
		return childFailure(path, first)
	}
	return nil
}

func (r *runner) parallel(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	outs := make([]any, len(n.Branches))
	fails := r.block(ctx, len(n.Branches), 0, n.FailFast, func(ctx context.Context, i int) *Failure {
		b := n.Branches[i]
		out, fail := r.sequence(ctx, fr, b.Nodes, nested(vars, len(b.Nodes)), join(path, b.Name))
		outs[i] = out
		return fail
	})
	output := make(map[string]any, len(n.Branches))
	for i, b := range n.Branches {
		output[b.Name] = outs[i]
	}
	return &outcome{output: output, fail: firstFailure(path, fails)}
}

func (r *runner) mapNode(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	v, err := eval(n.Items, vars)
	if err != nil {
		return condition(err)
	}
	items, ok := toList(v)
	if !ok {
		return condition(fmt.Errorf("map %s at %s gave %T, not a list", n.Items.Source, n.Items.Pos, v))
	}
	if len(items) > n.Max {
		return &outcome{fail: &Failure{Kind: schema.FailTooMany, Message: fmt.Sprintf("%d items, more than max %d; nothing ran", len(items), n.Max)}}
	}
	results := make([]any, len(items))
	// Items whose body is only leaves leave nothing pointing at their
	// environment (see loop): an ended item's is taken by the next, its
	// body's values taken out, instead of copying vars for every item.
	reuse := leavesOnly(n.Body)
	var envs sync.Pool
	fails := r.block(ctx, len(items), n.Concurrency, n.FailFast, func(ctx context.Context, i int) *Failure {
		var iv map[string]any
		if reuse {
			iv, _ = envs.Get().(map[string]any)
		}
		if iv == nil {
			iv = nested(vars, len(n.Body)+2)
		}
		iv["item"], iv["index"] = items[i], i+1
		out, fail := r.sequence(ctx, fr, n.Body, iv, path+"["+strconv.Itoa(i+1)+"]")
		results[i] = map[string]any{"item": items[i], "ok": fail == nil, "output": out, "error": fail.value()}
		if reuse {
			for _, b := range n.Body {
				delete(iv, b.ID)
			}
			envs.Put(iv)
		}
		return fail
	})
	for i, res := range results {
		if res == nil { // skipped by fail_fast
			results[i] = map[string]any{"item": items[i], "ok": false, "output": nil,
				"error": map[string]any{"kind": string(schema.FailCancelled), "message": "skipped: a sibling failed first", "visit": path + "[" + strconv.Itoa(i+1) + "]"}}
		}
	}
	return &outcome{output: results, fail: firstFailure(path, fails)}
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
	inner := fr.withScope(n.ID, path)
	previous := make(map[string]any, len(n.Body))
	for _, b := range n.Body {
		previous[b.ID] = nil
	}
	// One environment serves every iteration: the body adds only its own
	// nodes' values to it, and they are taken out before the next
	// iteration, which then sees what a fresh copy of vars would show.
	iv := nested(vars, len(n.Body)+1)
	// A body of leaves makes values that hold nothing of the environment
	// (text, answers, command results): nothing made in an iteration can
	// still point at the loop's own value or at the iteration before the
	// previous one. Such a loop keeps one map for its value and two for
	// the body's values, last and previous, used in turn.
	reuse := leavesOnly(n.Body)
	var self, spare map[string]any
	for i := 1; i <= n.Max; i++ {
		for _, b := range n.Body {
			delete(iv, b.ID)
		}
		if self == nil || !reuse {
			self = map[string]any{"previous": previous, "iteration": i}
		} else {
			self["previous"], self["iteration"] = previous, i
		}
		iv[n.ID] = self
		_, fail := r.sequence(ctx, inner, n.Body, iv, path+"#"+strconv.Itoa(i))
		last := spare // it has the body's ids, each overwritten below
		if last == nil {
			last = make(map[string]any, len(n.Body))
		}
		for _, b := range n.Body {
			last[b.ID] = iv[b.ID]
		}
		// The loop's output, made only when the loop ends.
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
		done, err := evalBool(n.Until, iv)
		if err != nil {
			o := condition(err)
			o.output = output(false)
			return o
		}
		if done {
			return &outcome{output: output(true)}
		}
		if i == n.Max {
			return &outcome{output: output(false), fail: &Failure{Kind: schema.FailUnconverged, Message: fmt.Sprintf("until did not hold after %d iterations", n.Max)}}
		}
		if reuse {
			spare = previous
		}
		previous = last
	}
	return &outcome{}
}

// leavesOnly reports whether nodes are all leaves: agents, commands and
// questions, whose values are made afresh, never taken from the
// environment.
func leavesOnly(nodes []*flows.Node) bool {
	for _, n := range nodes {
		if !isLeaf(n) && n.Kind != schema.KindAsk {
			return false
		}
	}
	return true
}

func (r *runner) call(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	callee := r.plan.Flows[n.Callee]
	var in any
	if n.Input != nil {
		v, err := eval(n.Input, vars)
		if err != nil {
			return condition(err)
		}
		in = v
	}
	input, err := checkInput(callee, in)
	if err != nil {
		return condition(err)
	}
	inner := &frame{flow: callee, parent: fr, scopes: map[string]string{"flow": path}, meters: fr.meters}
	inner = inner.withBudget(callee.Budget, "flow "+callee.Name)
	out, fail := r.sequence(ctx, inner, callee.Nodes, map[string]any{"input": input}, path)
	if fail != nil {
		return &outcome{output: out, fail: childFailure(path, fail)}
	}
	return &outcome{output: out}
}

func (r *runner) ask(ctx context.Context, n *flows.Node, path string) *outcome {
	if r.opts.Asker == nil {
		return &outcome{output: n.Default}
	}
	ans, err := r.opts.Asker.Ask(ctx, path, n.Question, n.Options, n.Default)
	if err != nil {
		if ctx.Err() != nil {
			return &outcome{fail: cancelled(ctx, path)}
		}
		return &outcome{fail: &Failure{Kind: schema.FailRefused, Message: err.Error()}}
	}
	return &outcome{output: ans}
}
