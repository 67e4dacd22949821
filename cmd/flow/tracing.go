package main

import (
	"context"
	"fmt"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/trace"
)

// traced runs start inside a trace of flow when the OTLP environment asks
// for one (docs/tracing.md), and runs it as it is otherwise. A trace that
// cannot be sent is a warning: the run's outcome does not depend on it.
func (a *app) traced(ctx context.Context, flow string, start func() (*engine.Result, error)) (*engine.Result, error) {
	if !trace.Enabled() {
		return start()
	}
	tr, err := trace.Start(ctx, flow, a.secrets)
	if err != nil {
		return nil, invalid("%v", err)
	}
	res, err := start()
	id, dir, ok := "", "", false
	if res != nil {
		id, dir, ok = res.RunID, res.Dir, res.OK
	}
	if terr := tr.End(id, dir, ok); terr != nil {
		fmt.Fprintf(a.stderr, "warning: traces not sent: %s\n", safeText(terr.Error()))
	}
	return res, err
}
