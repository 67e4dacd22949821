package temporal

import (
	"context"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// watcher long-polls a workflow execution's history (the server answers
// when an event is appended) and tells the mirror when something changed,
// so that the mirror asks for facts only then: every fact comes with a
// workflow task that completed, and every workflow task's end is an event.
// It also counts the activities in flight, whose heartbeats the mirror
// reads for progress, and sees the execution close. Its goroutine ends
// with stop.
type watcher struct {
	changed chan struct{} // a token when events came since the last receive

	mu      sync.Mutex
	pending int  // activities scheduled and not closed
	closed  bool // the execution ended
	// next is the execution the run continued as, once closed.
	next string
	// dc reads the run's payloads; trouble is what the mirror has yet to
	// say of the events (troubleOf).
	dc      converter.DataConverter
	trouble []string

	cancel context.CancelFunc
	wg     conc.WaitGroup
}

// watch starts watching the execution run of workflow id in namespace.
func watch(ctx context.Context, c client.Client, dc converter.DataConverter, namespace, id, run string) *watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{changed: make(chan struct{}, 1), cancel: cancel, dc: dc}
	w.wg.Go(func() { w.loop(ctx, c, namespace, id, run) })
	return w
}

func (w *watcher) stop() {
	w.cancel()
	w.wg.Wait()
}

// loop reads the history to its end and on as it grows, a page at a time
// and at most a page per pullGap: a fast run's events come in batches,
// and the mirror's live view lags by at most that. A read that fails
// (the server restarting) is made again a second later.
func (w *watcher) loop(ctx context.Context, c client.Client, namespace, id, run string) {
	var token []byte
	for ctx.Err() == nil {
		if token == nil { // from the first event: count afresh
			w.mu.Lock()
			w.pending = 0
			w.mu.Unlock()
		}
		resp, err := c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
			Namespace:              namespace,
			Execution:              &commonpb.WorkflowExecution{WorkflowId: id, RunId: run},
			NextPageToken:          token,
			WaitNewEvent:           true,
			HistoryEventFilterType: enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT,
		})
		pause := pullGap
		switch {
		case err != nil:
			pause = time.Second
		default:
			for _, e := range resp.GetHistory().GetEvents() {
				if can := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); can != nil {
					w.mu.Lock()
					w.next = can.GetNewExecutionRunId()
					w.mu.Unlock()
				}
				if t := troubleOf(e, w.dc); t != "" {
					w.mu.Lock()
					w.trouble = append(w.trouble, t)
					w.mu.Unlock()
				}
				if w.see(e.GetEventType()) {
					return
				}
			}
			token = resp.GetNextPageToken()
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// see takes one event and says whether the execution closed.
func (w *watcher) see(t enumspb.EventType) bool {
	w.mu.Lock()
	switch t {
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		w.pending++
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED,
		enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
		w.pending--
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		w.closed = true
	}
	closed := w.closed
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return closed
}

// troubles takes what the mirror has yet to say of the events.
func (w *watcher) troubles() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.trouble
	w.trouble = nil
	return t
}

// state is how many activities are in flight, whether the execution
// closed, and the execution it continued as if it did.
func (w *watcher) state() (pending int, closed bool, next string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending, w.closed, w.next
}
