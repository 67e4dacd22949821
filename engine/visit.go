package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/expr-lang/expr"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// outcome is what one visit produced.
type outcome struct {
	output   any
	skipped  bool
	fail     *record.Failure
	usage    *record.Usage
	agent    string
	model    string
	timeout  time.Duration // an agent turn's resolved timeout
	attempts int
	session  string
	scope    *record.Scope  // the memory scope the session belongs to
	file     string         // where an oversized answer was written
	size     int64          // its whole length
	home     string         // the home the visit wrote into, redacted when it ends
	answer   *record.Answer // who answered an ask, and when
	// worktree is x.worktree of an isolated node (docs/worktrees.md); wt is what the
	// end fact records of the worktree the visit ran in; land is the scope
	// of an isolated leaf still to land once its end is journaled.
	worktree any
	wt       *record.Worktree
	land     *worktrees.Scope
	// worker and transcript say where a remote LeafRunner ran the leaf
	// and left its transcript; "" in this process.
	worker, transcript string
	// key is a leaf's visit key; reused names the recorded visit that
	// answered it (docs/reuse-and-tests.md).
	key    *flows.VisitKey
	reused *record.Reused
	// deleg is the visit's delegator when its turns may delegate.
	deleg *delegator
}

// visit runs one node and journals its start and end.
func (r *runner) visit(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) (map[string]any, *record.Failure) {
	if o, ok := r.replayed(fr, n, vars, path); ok {
		if isLeaf(n) {
			r.ledger.Charge(fr.meters, o.usage)
		}
		if o.land != nil { // it ended, and did not land before the engine died
			r.landLeaf(ctx, fr, n, path, o)
		}
		return nodeValue(o)
	}
	if prev := r.journal.Ended(path); prev != nil && isLeaf(n) {
		r.ledger.Charge(fr.meters, prev.Usage) // an earlier attempt's spending counts
	}
	fr = fr.withBudget(n.Budget, path)
	start := r.rt.Now()
	// A block that ended well in an earlier attempt is entered again only
	// to rebuild its value from its children's replays: it is not journaled
	// (or counted) a second time unless it now ends otherwise.
	again := r.journal.Ended(path)
	reentry := again != nil && again.Succeeded() && !isLeaf(n)
	if !reentry {
		if err := r.journalStart(n, path, start); err != nil {
			return nodeValue(&outcome{fail: err})
		}
	}
	o := r.run(ctx, fr, n, vars, path)
	if reentry {
		if o.fail == nil {
			return r.reentered(ctx, n, path, o)
		}
		// It ends otherwise this time: journaled as a visit of its own.
		if err := r.journalStart(n, path, start); err != nil && o.fail == nil {
			o.fail = err
		}
	}
	r.end(ctx, fr, n, path, start, o)
	return nodeValue(o)
}

// run does the work of a visit that has started, its failure pointing at
// it.
func (r *runner) run(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	var o *outcome
	if ctx.Err() != nil {
		o = &outcome{fail: cancelled(ctx, path)}
	} else {
		o = r.work(ctx, fr, n, vars, path)
	}
	if o.fail != nil && o.fail.Visit == "" {
		o.fail.Visit = path
	}
	if o.fail != nil && o.fail.Visit == path && !o.fail.Pos.IsValid() {
		o.fail.Pos = n.Pos
	}
	return o
}

// reentered ends a block that ended well in an earlier attempt and again
// now: replayed, not journaled a second time.
func (r *runner) reentered(ctx context.Context, n *flows.Node, path string, o *outcome) (map[string]any, *record.Failure) {
	if n.Isolation && o.worktree == nil {
		o.worktree = flows.ZeroWorktree(n, 0)
	}
	ok := true
	r.emit(&record.Event{Type: record.EventVisitReplayed, Visit: path, Node: n.ID, Kind: n.Kind, OK: &ok})
	r.wt.CloseOwned(ctx, path)
	return nodeValue(o)
}

// end journals and announces the end of a visit that started at start,
// and lands an isolated leaf once its end is journaled.
func (r *runner) end(ctx context.Context, fr *frame, n *flows.Node, path string, start time.Time, o *outcome) {
	if o.home != "" {
		// What an agent CLI wrote into the home itself has not passed
		// through flow's writers.
		if err := r.redactHome(o.home, start); err != nil {
			r.emit(&record.Event{Type: record.EventNote, Visit: path, Message: fmt.Sprintf("redacting secrets in the home of %s: %v", path, err)})
		}
	}
	end := r.rt.Now()
	wall := end.Sub(start).Milliseconds()
	ok := o.fail == nil
	r.spent(o.usage)
	if err := r.dir.Fact(endFact(n, path, end, wall, o)); err != nil && o.fail == nil {
		o.fail = &record.Failure{Kind: schema.FailUnavailable, Message: err.Error(), Visit: path, Pos: n.Pos}
		o.land = nil
	}
	if o.land != nil {
		r.landLeaf(ctx, fr, n, path, o)
		ok = o.fail == nil
	}
	if n.Isolation && o.worktree == nil {
		o.worktree = flows.ZeroWorktree(n, 0)
	}
	r.emit(&record.Event{Time: end, Type: record.EventVisitEnd, Visit: path, Node: n.ID, Kind: n.Kind, Agent: o.agent, OK: &ok, Error: o.fail, Usage: o.usage, Model: o.model, WallMS: wall})
	r.wt.CloseOwned(ctx, path)
}

// endFact is the end fact of a visit of n at path that ended at end.
func endFact(n *flows.Node, path string, end time.Time, wall int64, o *outcome) *record.Fact {
	// A leaf's output is journaled whole: it cannot be had again without
	// running it. A block's output is made of its children's, so it is
	// not written twice; a resume rebuilds it by replaying the block.
	var recorded any
	if isLeaf(n) {
		recorded = o.output
	}
	e := record.VisitEnded{Time: end, Visit: path, Node: n.ID, Kind: n.Kind, Agent: o.agent, OK: o.fail == nil, Output: recorded,
		Error: o.fail, File: o.file, Size: o.size, Skipped: o.skipped, Usage: o.usage, Model: o.model, Attempts: o.attempts, Session: o.session,
		Scope: o.scope, Answer: o.answer, WallMS: wall, Worktree: o.wt, Worker: o.worker, Transcript: o.transcript,
		Key: o.key, Reused: o.reused}
	if o.timeout > 0 {
		e.Timeout = o.timeout.String()
	}
	return e.Fact()
}

// isLeaf reports whether n does its own work, whose outcome the journal
// keeps whole: an agent turn, a command, a question.
func isLeaf(n *flows.Node) bool {
	return n.Kind == schema.KindAgent || n.Kind == schema.KindRun || n.Kind == schema.KindAsk
}

// nodeValue is how a visit appears to the expressions after it:
// x.ok, x.output, x.error, x.skipped.
func nodeValue(o *outcome) (map[string]any, *record.Failure) {
	v := map[string]any{"ok": o.fail == nil, "output": o.output, "error": errorValue(o.fail), "skipped": o.skipped}
	if o.worktree != nil {
		v["worktree"] = o.worktree
	}
	if o.file != "" {
		v["_file"], v["_size"] = o.file, o.size
	}
	return v, o.fail
}

// errorValue is how a failure appears to expressions: x.error.kind and
// friends, empty strings when there is none.
func errorValue(f *record.Failure) map[string]any {
	if f == nil {
		return noError
	}
	return map[string]any{"kind": string(f.Kind), "message": f.Message, "visit": f.Visit}
}

// noError is the error of every visit that did not fail, shared: values in
// an expression's environment are never changed. Sharing it took a fifth
// off the peak heap of a 10,000-item map (BenchmarkMapMemory).
var noError = map[string]any{"kind": "", "message": "", "visit": ""}

func eval(e *flows.Expr, vars map[string]any) (any, error) {
	//workflowcheck:ignore expr's VM uses channels only in its debugger and the clock in its profiler, both off; flows removes the clock's builtins
	out, err := expr.Run(e.Program, vars)
	if err != nil {
		return nil, fmt.Errorf("evaluating %s at %s: %s", e.Source, e.Pos, schema.PlainTypes(err.Error()))
	}
	return out, nil
}

func evalBool(e *flows.Expr, vars map[string]any) (bool, error) {
	v, err := eval(e, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s at %s gave %s, not a boolean", e.Source, e.Pos, schema.KindOf(v))
	}
	return b, nil
}

func condition(err error) *outcome {
	return &outcome{fail: &record.Failure{Kind: schema.FailCondition, Message: err.Error()}}
}

// journalStart journals and announces a visit's start.
func (r *runner) journalStart(n *flows.Node, path string, start time.Time) *record.Failure {
	started := record.VisitStarted{Time: start, Visit: path, Node: n.ID, Kind: n.Kind}
	r.childStart(&started)
	if err := r.dir.Fact(started.Fact()); err != nil {
		return &record.Failure{Kind: schema.FailUnavailable, Message: err.Error(), Visit: path, Pos: n.Pos}
	}
	r.emit(&record.Event{Time: start, Type: record.EventVisitStart, Visit: path, Node: n.ID, Kind: n.Kind})
	return nil
}
