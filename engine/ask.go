package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// Asker asks the person running the flow a question: at the terminal
// (flow run), or on the page and the API (flow serve).
//
// Ask blocks until someone answers or ctx ends. The engine bounds the wait
// by the ask's `timeout:` (ctx ends then, and the engine takes the default
// or fails the visit `timeout`); an Asker never takes the default on its
// own except for an empty answer at a terminal. An answer outside
// Question.Options is refused.
type Asker interface {
	Ask(ctx context.Context, q *Question) (Answer, error)
}

// Question is one ask visit as an Asker gets it.
type Question struct {
	Visit string // the visit path
	Text  string // the ask: with its ${{ }} rendered
	// Shown is the ask's `show:`: what the person reads in full before
	// answering, in the order the flow lists it.
	Shown      []Shown
	Options    []string // empty: any non-empty answer
	Default    string
	HasDefault bool
	Timeout    time.Duration // 0: it waits until the run ends
}

// Shown is one node value an ask shows: its address and its output as a
// turn's reads would give it (text as it is, typed values as JSON).
type Shown struct {
	Node string `json:"node"`
	Text string `json:"text"`
}

// Answer is what an Asker got, and from whom: journaled on the ask's end
// fact (rundir.Answer), so that a resume keeps it.
type Answer struct {
	Value string
	By    string // who answered: the API token's name, "terminal", …
}

// ask asks the Asker, within the node's timeout. Nobody to ask, or
// nobody answering in time, takes the default; without a default the
// visit fails `timeout` (an unattended run was refused before it started).
func (r *runner) ask(ctx context.Context, n *flows.Node, vars map[string]any, path string) *outcome {
	text, err := render(n.Ask, vars)
	if err != nil {
		return condition(err)
	}
	var shown []Shown
	for _, rd := range n.Show {
		v, err := eval(rd.Expr, vars)
		if err != nil {
			return condition(err)
		}
		shown = append(shown, Shown{Node: rd.Address, Text: shownText(v)})
	}
	if r.opts.Asker == nil {
		return &outcome{output: n.Default, answer: &rundir.Answer{Time: r.rt.Now(), Default: true}}
	}
	actx := ctx
	if n.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, n.Timeout, errTimeout)
		defer cancel()
	}
	q := &Question{Visit: path, Text: text, Shown: shown, Options: n.Options, Default: n.Default, HasDefault: n.HasDefault, Timeout: n.Timeout}
	ans, err := r.opts.Asker.Ask(actx, q)
	switch {
	case ctx.Err() != nil:
		return &outcome{fail: cancelled(ctx, path)}
	case err != nil && errors.Is(context.Cause(actx), errTimeout):
		if !n.HasDefault {
			return &outcome{fail: &Failure{Kind: schema.FailTimeout, Message: fmt.Sprintf("nobody answered within %s, and the ask has no default", n.Timeout)}}
		}
		return &outcome{output: n.Default, answer: &rundir.Answer{Time: r.rt.Now(), Default: true}}
	case err != nil:
		return &outcome{fail: &Failure{Kind: schema.FailRefused, Message: err.Error()}}
	case len(n.Options) > 0 && !slices.Contains(n.Options, ans.Value):
		return &outcome{fail: &Failure{Kind: schema.FailRefused, Message: fmt.Sprintf("the answer %q is not one of %s", ans.Value, strings.Join(n.Options, ", "))}}
	}
	return &outcome{output: ans.Value, answer: &rundir.Answer{By: ans.By, Time: r.rt.Now()}}
}

// shownText is a node value as an ask shows it: whole, never cut at a
// turn's answer limit (an oversized answer is read back from its file).
func shownText(v any) string {
	nv, ok := v.(map[string]any)
	if ok && nv != nil {
		if file, _ := nv["_file"].(string); file != "" {
			if b, err := os.ReadFile(file); err == nil {
				return string(b)
			}
		}
	}
	return readText(v, true)
}
