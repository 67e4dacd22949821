package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
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
	// File holds the whole answer when Text is its bounded prefix.
	File string `json:"file,omitempty"`
}

// Answer is what an Asker got, and from whom: journaled on the ask's end
// fact (record.Answer), so that a resume keeps it.
type Answer struct {
	Value string
	By    string // who answered: the API token's name, "terminal", …
}

// ask asks the Asker, within the node's timeout. Nobody to ask, or
// nobody answering in time, takes the default; without a default the
// visit fails `timeout` (an unattended run was refused before it started).
func (r *runner) ask(ctx context.Context, n *flows.Node, vars map[string]any, path string) *outcome {
	an := n.AsAsk()
	text, err := render(an.Ask, vars)
	if err != nil {
		return condition(err)
	}
	var shown []Shown
	for _, rd := range an.Show {
		v, err := eval(rd.Expr, vars)
		if err != nil {
			return condition(err)
		}
		shown = append(shown, shownValue(rd.Address, v))
	}
	if r.opts.Asker == nil {
		return &outcome{output: an.Default, answer: &record.Answer{Time: r.rt.Now(), Default: true}}
	}
	q := &Question{Visit: path, Text: text, Shown: shown, Options: an.Options, Default: an.Default, HasDefault: an.HasDefault, Timeout: n.Timeout}
	var ans Answer
	timedOut := r.within(ctx, n.Timeout, func(actx context.Context) { ans, err = r.opts.Asker.Ask(actx, q) })
	switch {
	case ctx.Err() != nil:
		return &outcome{fail: cancelled(ctx, path)}
	case err != nil && timedOut:
		if !an.HasDefault {
			return &outcome{fail: &record.Failure{Kind: schema.FailTimeout, Message: fmt.Sprintf("nobody answered within %s, and the ask has no default", n.Timeout)}}
		}
		return &outcome{output: an.Default, answer: &record.Answer{Time: r.rt.Now(), Default: true}}
	case err != nil:
		return &outcome{fail: &record.Failure{Kind: schema.FailRefused, Message: err.Error()}}
	case len(an.Options) > 0 && !slices.Contains(an.Options, ans.Value):
		return &outcome{fail: &record.Failure{Kind: schema.FailRefused, Message: fmt.Sprintf("the answer %q is not one of %s", ans.Value, strings.Join(an.Options, ", "))}}
	}
	return &outcome{output: ans.Value, answer: &record.Answer{By: ans.By, Time: r.rt.Now()}}
}

// shownValue is a node value as an ask shows it: as a turn's reads give it,
// and the file that holds an oversized answer whole, which the Asker
// reads (rundir.WholeAnswer) where the file is: the walker reads no file.
func shownValue(node string, v any) Shown {
	s := Shown{Node: node, Text: readText(v, true)}
	if nv, ok := v.(map[string]any); ok && nv != nil {
		s.File, _ = nv["_file"].(string)
	}
	return s
}

// within runs f, and cancels its ctx with cause errTimeout once d passed
// on the host's clock (d <= 0: never). It says whether d passed first.
// The wait is the host's Sleep beside f in a group of the host's, so an
// ask's timeout is a workflow timer on Temporal and a real one here.
func (r *runner) within(ctx context.Context, d time.Duration, f func(ctx context.Context)) (timedOut bool) {
	if d <= 0 {
		f(ctx)
		return false
	}
	r.rt.Group(ctx, 2, 0, errTimeout, func(gctx context.Context, i int) bool {
		if i == 0 {
			f(gctx)
			return true // ends the wait
		}
		if r.rt.Sleep(gctx, d) == nil {
			timedOut = true
			return true // ends f, with cause errTimeout
		}
		return false
	})
	return timedOut
}
