package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// Waiter is where a host keeps what a run's waits wait for
// (docs/waits.md): the events delivered to the run, and the clock's end
// of a wait.
//
// Await returns the event w waits for when it has been delivered (nil
// for a wait for a time). A host that can hold a walk that waits without
// holding a process (a Temporal workflow) returns once the event came or
// w.Until passed; a host that cannot (this machine) returns at once,
// and the walker then ends the run waiting, to be resumed.
type Waiter interface {
	Await(ctx context.Context, visit string, w *record.Wait) (*Delivery, error)
}

// Delivery is an event delivered to a run: its JSON data, who delivered
// it and when.
type Delivery struct {
	Data []byte
	By   string
	Time time.Time
}

// waitWalk is the walk of one wait visit: what it waits for, journaled
// once, then satisfied by the host's delivery or the clock, or not yet.
type waitWalk struct {
	r    *runner
	n    *flows.Node
	wn   *flows.WaitNode
	path string
}

// wait walks a wait node (waitWalk).
func (r *runner) wait(ctx context.Context, n *flows.Node, vars map[string]any, path string) *outcome {
	return (&waitWalk{r: r, n: n, wn: n.AsWait(), path: path}).walk(ctx, vars)
}

func (ww *waitWalk) walk(ctx context.Context, vars map[string]any) *outcome {
	r := ww.r
	w, fail := ww.reached(vars)
	if fail != nil {
		return &outcome{fail: fail}
	}
	d, err := r.waiter.Await(ctx, ww.path, w)
	switch {
	case ctx.Err() != nil:
		return &outcome{fail: cancelled(ctx, ww.path)}
	case err != nil:
		return &outcome{fail: &record.Failure{Kind: schema.FailUnavailable, Message: fmt.Sprintf("reading the events of %s: %v", ww.path, err)}}
	}
	// An event that came after the wait's end came too late: the end
	// decided first, whenever the run looks.
	if d != nil && (w.Until == nil || !d.Time.After(*w.Until)) {
		return ww.delivered(d)
	}
	if w.Until != nil && !r.rt.Now().Before(*w.Until) {
		return ww.ended(*w.Until)
	}
	return &outcome{fail: &record.Failure{Kind: schema.FailWaiting, Message: waitingMessage(w)}}
}

// reached is the visit's wait: the one an earlier attempt journaled
// (its since stays), else a new one, journaled now.
func (ww *waitWalk) reached(vars map[string]any) (*record.Wait, *record.Failure) {
	r := ww.r
	if f := r.waits[ww.path]; f != nil {
		return f.Wait, nil
	}
	now := r.rt.Now()
	w := &record.Wait{Event: ww.wn.Event, Since: now}
	switch {
	case ww.wn.For > 0:
		w.Until = timeAt(now.Add(ww.wn.For))
	case ww.wn.Until != nil:
		s, err := render(ww.wn.Until, vars)
		if err != nil {
			return nil, condition(err).fail
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, &record.Failure{Kind: schema.FailCondition, Message: fmt.Sprintf("wait.until %s gave %q, not an RFC 3339 time", ww.wn.Until.Source, s)}
		}
		w.Until = timeAt(t)
	case ww.wn.Timeout > 0:
		w.Until = timeAt(now.Add(ww.wn.Timeout))
	}
	if err := r.dir.Fact(record.VisitWaiting{Time: now, Visit: ww.path, Node: ww.n.ID, Wait: *w}.Fact()); err != nil {
		return nil, &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	r.emit(&record.Event{Time: now, Type: record.EventVisitWaiting, Visit: ww.path, Node: ww.n.ID, Kind: ww.n.Kind, Wait: w})
	return w, nil
}

// delivered is the visit's outcome from its event: the data, of the
// node's output type, and who delivered it when.
func (ww *waitWalk) delivered(d *Delivery) *outcome {
	v, err := parseTyped(string(d.Data), ww.n.Output)
	if err != nil {
		return &outcome{fail: &record.Failure{Kind: schema.FailSchema, Message: fmt.Sprintf("the data of event %s does not fit the wait's output: %v", ww.wn.Event, err)}}
	}
	return &outcome{output: v, answer: &record.Answer{By: d.By, Time: d.Time}}
}

// ended is the outcome of a wait whose end came: a time's is the end
// itself (RFC 3339); an event's is its default, or `timeout` without one.
func (ww *waitWalk) ended(at time.Time) *outcome {
	if ww.wn.Event == "" {
		return &outcome{output: at.Format(time.RFC3339)}
	}
	if !ww.wn.HasDefault {
		return &outcome{fail: &record.Failure{Kind: schema.FailTimeout, Message: fmt.Sprintf("event %s did not come within %s, and the wait has no default", ww.wn.Event, ww.wn.Timeout)}}
	}
	return &outcome{output: normalize(ww.n.Output, ww.wn.Default), answer: &record.Answer{Time: at, Default: true}}
}

// waitingMessage says what a waiting visit waits for, and until when.
func waitingMessage(w *record.Wait) string {
	s := "waiting on " + w.What() + " since " + w.Since.Format(time.RFC3339)
	if w.Until != nil {
		s += ", until " + w.Until.Format(time.RFC3339)
	}
	return s
}

func timeAt(t time.Time) *time.Time { return &t }

// waitingNode is a wait node of p, or nil.
func waitingNode(p *flows.Plan) *flows.Node {
	return firstNode(p, func(n *flows.Node) bool { return n.AsWait() != nil })
}

// parked says a failure is a wait not yet satisfied: no on_fail:
// continue goes on from it, and the run ends waiting.
func parked(f *record.Failure) bool { return f != nil && f.Root().Kind == schema.FailWaiting }
