package temporal

import (
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
)

// TroubleNote starts the notes the mirror makes of what holds a run up on
// Temporal without being its failure: a workflow task a worker failed (a
// worker without the run's key), an activity attempt a worker could not
// open, a signal refused. flow show prints them (docs/temporal.md, What
// Temporal keeps).
const TroubleNote = "Temporal: "

// troubleOf is what the mirror says of a history event, or "": a failed
// workflow task, with the worker and why; a signal whose payload this
// client refuses or cannot open (what the workflow does with it too: it
// drops a refused one, and its task fails on one no worker can open).
func troubleOf(e *historypb.HistoryEvent, dc converter.DataConverter) string {
	if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil {
		// A worker's own failure (a panic, a payload it could not open,
		// nondeterminism), not the server's routine ones (a signal that
		// came while the task completed, a sticky queue reset).
		switch c := a.GetCause(); {
		case strings.Contains(failureText(a.GetFailure()), payloadMark),
			c == enumspb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, c == enumspb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR:
		default:
			return ""
		}
		return fmt.Sprintf("%sworker %s failed the run's workflow task (%s), which Temporal retries: %s", TroubleNote,
			orUnknown(a.GetIdentity()), strings.TrimPrefix(a.GetCause().String(), "WorkflowTaskFailedCause"), oneLine(a.GetFailure().GetMessage()))
	}
	if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
		if err := dc.FromPayloads(a.GetInput(), new(any)); err != nil {
			return fmt.Sprintf("%sthe signal %s from %s is refused: %s", TroubleNote, a.GetSignalName(), orUnknown(a.GetIdentity()), oneLine(err.Error()))
		}
	}
	return ""
}

// attemptTrouble is what the mirror says of an activity in flight whose
// last attempt a worker could not open, or "", and what makes it the same
// trouble as another (the worker and why, whichever activity).
func attemptTrouble(a *PendingActivity) (msg, same string) {
	f := a.GetLastFailure()
	if f == nil || !strings.Contains(failureText(f), payloadMark) {
		return "", ""
	}
	why := oneLine(failureText(f))
	return fmt.Sprintf("%sworker %s could not run %s (Temporal retries it, on a worker with the key): %s", TroubleNote,
		orUnknown(a.GetLastWorkerIdentity()), a.GetActivityId(), why), a.GetLastWorkerIdentity() + "\x00" + why
}

func orUnknown(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// failureText is a failure's message and its causes'.
func failureText(f *failurepb.Failure) string {
	var parts []string
	for ; f != nil; f = f.GetCause() {
		parts = append(parts, f.GetMessage())
	}
	return strings.Join(parts, ": ")
}
