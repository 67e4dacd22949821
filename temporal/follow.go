package temporal

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/flowrun/flow/rundir"
)

// follow moves the mirror from an execution that continued as new to the
// next one: it mirrors the facts of the closed execution it lacks (a
// worker answers the query by replaying it), then records the next
// execution in the snapshot, with the journal's facts so far as its base,
// so that flow resume re-attaches there.
func (m *mirror) follow(ctx context.Context, next string) error {
	// The next execution says how many facts this one recorded; when the
	// mirror has them all (it read them in the pause before the execution
	// continued), the closed execution is not read again.
	var before *FactsPage
	for range 40 {
		if v, err := m.c.Client.QueryWorkflow(ctx, m.ref.Workflow, next, QueryFacts, 1<<30); err == nil {
			var page FactsPage
			if v.Get(&page) == nil {
				before = &page
				break
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if before == nil || m.next < before.Before {
		if err := m.pullClosed(ctx); err != nil {
			return fmt.Errorf("reading the last facts of run %s's execution %s (flow resume %s reads them later): %w", m.ref.Workflow, m.ref.Execution, m.ref.Workflow, err)
		}
	}
	snap, err := rundir.ReadSnapshot(m.dir)
	if err != nil {
		return err
	}
	m.ref.Base += m.next
	m.ref.Execution, m.next = next, 0
	snap.Temporal = &m.ref
	return m.w.WriteSnapshot(snap)
}

// firstExecution walks back from execution (whose first event is first)
// to the run's first execution, through the executions each continued:
// a mirror made from a later one would lack the facts of those before.
func firstExecution(ctx context.Context, c client.Client, id, execution string, first *historyEvent) (string, *historyEvent, error) {
	for {
		prev := first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			return execution, first, nil
		}
		it := c.GetWorkflowHistory(ctx, id, prev, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			return "", nil, fmt.Errorf("execution %s has no history", prev)
		}
		e, err := it.Next()
		if err != nil {
			return "", nil, err
		}
		execution, first = prev, e
	}
}

type historyEvent = historypb.HistoryEvent
