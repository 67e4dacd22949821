package temporal

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// reusedLeaves answer, in the workflow, a leaf whose key the run's input
// carries from its recording (reuse.go), and hand every other to next, the
// activities. A recorded turn that delegated first makes its recorded
// calls again, each child a visit of the walk answered in turn (from its
// own recording, or live on a worker); the recorded answer stands only if
// every child answered as recorded, as locally (package reuse,
// delegateAgain). Nothing here reads a disk: deterministic.
type reusedLeaves struct {
	next   engine.LeafRunner
	byKey  map[string]ReusedVisit
	delegs *workflowDelegates
}

var _ engine.LeafRunner = reusedLeaves{}

// withReused wraps next with the recorded visits blob carries, or
// returns next when it carries none.
func withReused(next engine.LeafRunner, blob []byte, delegs *workflowDelegates) (engine.LeafRunner, error) {
	visits, err := unpackReused(blob)
	if err != nil || len(visits) == 0 {
		return next, err
	}
	return reusedLeaves{next: next, byKey: visits, delegs: delegs}, nil
}

// unpackReused undoes packReused.
func unpackReused(blob []byte) (map[string]ReusedVisit, error) {
	if len(blob) == 0 {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, err
	}
	var visits map[string]ReusedVisit
	if err := json.NewDecoder(zr).Decode(&visits); err != nil {
		return nil, err
	}
	return visits, nil
}

func (l reusedLeaves) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if t.Key != nil {
		if v, ok := l.byKey[t.Key.Key]; ok {
			changed, err := l.again(ctx, v, t)
			if err != nil {
				return nil, err
			}
			if changed == "" {
				return v.turn(t)
			}
			// Its children ran and one answers otherwise: the turn runs
			// live, its calls answered by those children.
			if t.Delegate != nil && t.Delegate.Restart != nil {
				t.Delegate.Restart()
			}
		}
	}
	return l.next.Turn(ctx, t)
}

// Command answers c from its recording when its node says reuse: true.
func (l reusedLeaves) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if c.Key != nil && c.Reuse {
		if v, ok := l.byKey[c.Key.Key]; ok {
			out, _ := v.Output.(map[string]any)
			res := &engine.CommandResult{Reused: v.reused()}
			res.Passed, _ = out["passed"].(bool)
			exit, _ := out["exit"].(float64)
			res.Exit = int(exit)
			res.Report, _ = out["report"].(string)
			return res, nil
		}
	}
	return l.next.Command(ctx, c)
}

func (v ReusedVisit) reused() *record.Reused {
	return &record.Reused{Run: v.Run, Visit: v.Visit, Saved: v.Saved}
}

// turn is the recorded answer as t's result, at no cost: a typed answer
// (or one that is not a string) handed on as JSON, as locally.
func (v ReusedVisit) turn(t *engine.Turn) (*engine.TurnResult, error) {
	res := &engine.TurnResult{Status: engine.Completed, File: v.File, Size: v.Size, Transcript: v.Transcript, Reused: v.reused()}
	if s, ok := v.Output.(string); ok && t.OutputSchema == nil {
		res.Output = s
		return res, nil
	}
	b, err := json.Marshal(v.Output)
	if err != nil {
		return nil, fmt.Errorf("%w: the recorded answer of %s: %v", engine.ErrUnavailable, v.Visit, err)
	}
	res.Output = string(b)
	return res, nil
}

// again makes the recorded visit v's delegate calls again through t's
// delegation, in order, as the workflow decides a worker's call (the
// walker's handler): each child is a visit of this run. changed names the
// first child whose answer now is not the recorded one.
func (l reusedLeaves) again(ctx context.Context, v ReusedVisit, t *engine.Turn) (changed string, err error) {
	if t.Delegate == nil || len(v.Children) == 0 {
		return "", nil
	}
	w := workflowOf(ctx)
	nth := map[[2]string]int{}
	for _, c := range v.Children {
		call := DelegateCall{Token: t.Delegate.Token, Agent: c.Agent, Task: c.Task, Nth: nth[[2]string{c.Agent, c.Task}]}
		nth[[2]string{c.Agent, c.Task}]++
		reply, err := l.delegs.call(w, call)
		if err != nil {
			return "", fmt.Errorf("%w: %s: repeating its recorded delegate call to %s (%s): %v", engine.ErrUnavailable, t.Visit, c.Agent, c.Path, err)
		}
		if reply.Error != "" && c.OK {
			return "", fmt.Errorf("%w: %s: its recorded delegate call to %s (%s) has no answer now: %s", engine.ErrUnavailable, t.Visit, c.Agent, c.Path, reply.Error)
		}
		if changed == "" {
			changed = c.changed(reply)
		}
	}
	return changed, nil
}

// changed says how the answer of the recorded child c differs now, or
// "". An answer too long for a reply is compared by its first part, which
// is what the parent's turn read.
func (c ReusedChild) changed(reply engine.DelegateReply) string {
	switch {
	case !c.OK && reply.Error != "":
		return ""
	case !c.OK:
		return fmt.Sprintf("its child %s succeeds now; it failed when recorded", c.Path)
	case reply.Answer == c.Answer || strings.HasPrefix(reply.Answer, c.Answer+"\n\n[the answer goes on: "):
		return ""
	}
	return fmt.Sprintf("its child %s answers otherwise than when recorded", c.Path)
}
