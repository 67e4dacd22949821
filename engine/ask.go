package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// ask asks the Asker, within the node's timeout. Nobody to ask, or
// nobody answering in time, takes the default; without a default the
// visit fails `timeout` (an unattended run was refused before it started).
func (r *runner) ask(ctx context.Context, n *flows.Node, path string) *outcome {
	if r.opts.Asker == nil {
		return &outcome{output: n.Default, answer: &rundir.Answer{Time: r.rt.Now(), Default: true}}
	}
	actx := ctx
	if n.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, n.Timeout, errTimeout)
		defer cancel()
	}
	q := &Question{Visit: path, Text: n.Question, Options: n.Options, Default: n.Default, HasDefault: n.HasDefault, Timeout: n.Timeout}
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
