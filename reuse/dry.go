package reuse

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
)

// Decision is what `flow plan --reuse` says of one leaf visit: reused
// (from which run's visit) or run, and for a run the first input that
// differs from the nearest recorded visit.
type Decision struct {
	Visit  string `json:"visit"`
	Reuse  bool   `json:"reuse"`
	From   string `json:"from,omitempty"` // run/visit
	Reason string `json:"reason,omitempty"`
}

// Dry is a LeafRunner that runs nothing: a leaf a recording answers takes
// the recorded answer, any other is answered with a Placeholder, so that
// a walk of the flow says, before any spend, which visits would be reused
// and why the others would run. A later visit whose turn text holds a
// placeholder reads a visit that re-runs.
type Dry struct {
	From *Set

	mu        sync.Mutex
	decisions []Decision
}

var _ engine.LeafRunner = (*Dry)(nil)

// Decisions are the visits walked so far, in the order they started.
func (d *Dry) Decisions() []Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Decision(nil), d.decisions...)
}

func (d *Dry) note(x Decision) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decisions = append(d.decisions, x)
	return len(d.decisions) - 1
}

// decide fills in the decision noted at i.
func (d *Dry) decide(i int, x Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decisions[i] = x
}

// Turn answers t from the recording, or with a placeholder. A visit of
// an isolated scope is reused only if its recorded change still applies
// to its worktree, which a walk that makes none cannot tell: it is said so.
//
// A recorded visit that delegated is reused only if its children are:
// its recorded calls are made again (delegateAgain), each child walked as
// a visit of its own, and a child that would run makes its parent run
// too. A parent that runs is assumed to ask again what the recorded visit
// at its path asked, so that its children are predicted as well.
func (d *Dry) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	i := d.note(Decision{Visit: t.Visit}) // before its children's
	if t.Key != nil {
		if h, ok := d.From.lookup(t.Key.Key); ok && d.From.away(h) == "" {
			changed, err := delegateAgain(ctx, h, t)
			if err != nil {
				return nil, err
			}
			if changed == "" {
				d.decide(i, Decision{Visit: t.Visit, Reuse: true, From: h.rec.Name + "/" + h.fact.Visit, Reason: isolatedReuse(t.Key)})
				return answer(h, t)
			}
			d.decide(i, Decision{Visit: t.Visit, Reason: changed})
			return d.placeholder(t), nil
		}
	}
	m := d.From.explain(t.Visit, t.Key, t.Model)
	if why := d.From.awayKey(t.Key); why != "" {
		m.Reason = why
	}
	d.decide(i, Decision{Visit: t.Visit, Reason: m.Reason})
	if h, ok := d.From.nearest(t.Visit); ok {
		if _, err := delegateAgain(ctx, h, t); err != nil {
			return nil, err
		}
	}
	return d.placeholder(t), nil
}

// placeholder stands in for the answer of a turn that will run.
func (d *Dry) placeholder(t *engine.Turn) *engine.TurnResult {
	out := fmt.Sprintf(Placeholder, t.Visit)
	if t.OutputSchema != nil {
		var s map[string]any
		_ = json.Unmarshal(t.OutputSchema, &s)
		b, _ := json.Marshal(zeroOf(s))
		out = string(b)
	}
	return &engine.TurnResult{Status: engine.Completed, Output: out}
}

func isolatedReuse(k *flows.VisitKey) string {
	if k != nil && k.Isolated {
		return "if its recorded change to the worktree still applies"
	}
	return ""
}

// Command answers c from the recording when its node allows it, else
// with a placeholder that passed.
func (d *Dry) Command(_ context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if c.Key != nil && c.Reuse {
		if h, ok := d.From.lookup(c.Key.Key); ok && d.From.away(h) == "" {
			d.note(Decision{Visit: c.Visit, Reuse: true, From: h.rec.Name + "/" + h.fact.Visit, Reason: isolatedReuse(c.Key)})
			return commandAnswer(h)
		}
	}
	reason := "a run node runs again unless it says reuse: true"
	if c.Reuse {
		reason = d.From.explain(c.Visit, c.Key, "").Reason
		if why := d.From.awayKey(c.Key); why != "" {
			reason = why
		}
	}
	if c.Key != nil && !c.Reuse {
		if h, ok := d.From.lookup(c.Key.Key); ok {
			// The same command as recorded: its recorded result stands
			// in for what it will print, so that what reads it is
			// judged on that.
			d.note(Decision{Visit: c.Visit, Reason: reason + " (the walk assumes its recorded result)"})
			return commandAnswer(h)
		}
	}
	d.note(Decision{Visit: c.Visit, Reason: reason})
	return &engine.CommandResult{Passed: true, Report: fmt.Sprintf(Placeholder, c.Visit)}, nil
}

// zeroOf is the least value that fits the JSON Schema s: what a typed
// visit that will run stands in with.
func zeroOf(s map[string]any) any {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	t, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		t, _ = ts[0].(string)
	}
	switch t {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			p, _ := props[name].(map[string]any)
			out[name] = zeroOf(p)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	}
	return ""
}

// Reads says which visit a placeholder in text stands for, if any.
func reads(text string) (string, bool) {
	const mark = "⟦flow plan: the answer of "
	i := strings.Index(text, mark)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(mark):]
	j := strings.Index(rest, "⟧")
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}
