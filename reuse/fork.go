package reuse

import (
	"context"
	"encoding/json"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// ForkLeaves answers the leaves of a fork (flow fork, docs/fork-and-diff.md):
// a visit whose output --set gives takes it without running; a visit the
// fork point reaches runs (a fresh sample, even if its key is unchanged);
// any other is answered from the original run by its key, commands
// included, and runs only when the original run holds no answer for it.
type ForkLeaves struct {
	Reach *Reach
	// Set are the outputs --set gives, by visit path.
	Set map[string]any
	// From answers the visits the fork point does not reach: the original
	// run's recording, with Next the live leaves.
	From *Leaves
}

var _ engine.LeafRunner = (*ForkLeaves)(nil)

// Turn answers t as the fork says.
func (f *ForkLeaves) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if v, ok := f.Set[t.Visit]; ok {
		return setAnswer(t, v)
	}
	if f.Reach.Reaches(t.Visit) {
		return f.From.Next.Turn(ctx, t)
	}
	return f.From.Turn(ctx, t)
}

// Command answers c as the fork says: a command the fork point does not
// reach is the original run's, whatever its node's reuse says (unless it
// says never, which offers no key).
func (f *ForkLeaves) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if v, ok := f.Set[c.Visit]; ok {
		return setCommand(c, v)
	}
	if f.Reach.Reaches(c.Visit) {
		return f.From.Next.Command(ctx, c)
	}
	cc := *c
	cc.Reuse = true
	return f.From.Command(ctx, &cc)
}

// setAnswer is the turn's answer --set gives: a string as it is for an
// untyped output, any value as JSON for a typed one (the walker checks it
// against the node's output schema, as it does every answer).
func setAnswer(t *engine.Turn, v any) (*engine.TurnResult, error) {
	res := &engine.TurnResult{Status: engine.Completed, Reused: &record.Reused{Run: "--set", Visit: t.Visit}}
	if s, ok := v.(string); ok && t.OutputSchema == nil {
		res.Output = s
		return res, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, unavailable("--set %s: %w", t.Visit, err)
	}
	res.Output = string(b)
	return res, nil
}

// setCommand is a run node's result --set gives: {passed, exit, report}.
func setCommand(c *engine.Command, v any) (*engine.CommandResult, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, unavailable("--set %s: a run node's output is {passed, exit, report}", c.Visit)
	}
	res := &engine.CommandResult{Reused: &record.Reused{Run: "--set", Visit: c.Visit}}
	res.Passed, _ = m["passed"].(bool)
	exit, _ := m["exit"].(float64)
	res.Exit = int(exit)
	res.Report, _ = m["report"].(string)
	return res, nil
}
