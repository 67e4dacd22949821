package temporal

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"

	"github.com/flowrun/flow/engine"
)

// An activity whose every attempt went to workers that could not open its
// payloads (another temporal.key, or none) does not end its visit: the
// workflow schedules it again until a worker with the key takes it. On
// the code before, the visit ended `unavailable`.
func TestWorkflowSchedulesAgainAnActivityNoWorkerCouldOpen(t *testing.T) {
	h := newHarness(t, &scripted{})
	var calls atomic.Int32
	h.env.RegisterActivityWithOptions(func(ctx context.Context, in *CommandInput) (*CommandOutput, error) {
		if calls.Add(1) <= 4 { // the three attempts of the first schedule, and the first of the next
			return nil, &PayloadError{Unreadable: true, Msg: "a payload is sealed with key abc, " + unreadableMark + " (it has key def)"}
		}
		res, _ := echoCommands{}.Run(ctx, &engine.Command{Argv: in.Argv})
		return &CommandOutput{Result: res}, nil
	}, activity.RegisterOptions{Name: CommandActivity, DisableAlreadyRegisteredCheck: true})
	out, facts := h.run("name: f\nnodes:\n  - {id: t, run: [echo, hi]}\n", nil)
	if !out.OK {
		t.Fatalf("the run ended %+v, want it to succeed once a worker could open the payload", out)
	}
	expectEnds(t, facts, map[string]string{"t": "ok"})
	if n := calls.Load(); n != 5 {
		t.Errorf("the command's activity ran %d times, want 5 (3 attempts, then 2 of the next schedule)", n)
	}
}

// What the mirror notes of a run's history: a worker's own workflow task
// failure and a refused signal, not the server's routine task failures
// nor a sealed answer of the run's own.
func TestMirrorNotesWhatHoldsARunUp(t *testing.T) {
	k := testKey(t, "the run's key")
	dc := in(k, "run")
	failed := func(cause enumspb.WorkflowTaskFailedCause, msg string) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_WorkflowTaskFailedEventAttributes{
			WorkflowTaskFailedEventAttributes: &historypb.WorkflowTaskFailedEventAttributes{Cause: cause, Identity: "w1", Failure: &failurepb.Failure{Message: msg}}}}
	}
	signal := func(p *commonpb.Payloads) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{
			WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{SignalName: SignalAnswer, Identity: "mallory", Input: p}}}
	}
	clear, _ := DataConverter(Key{}).ToPayloads(AnswerSignal{Visit: "gate", Value: "yes"})
	sealed, _ := dc.ToPayloads(AnswerSignal{Visit: "gate", Value: "yes"})
	for _, c := range []struct {
		e    *historypb.HistoryEvent
		want string
	}{
		{failed(enumspb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE, payloadMark+"a payload is sealed with key abc, "+unreadableMark), "worker w1 failed the run's workflow task"},
		{failed(enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND, "UnhandledCommand"), ""},
		{signal(clear), "the signal flow.answer from mallory is refused"},
		{signal(sealed), ""},
	} {
		got := troubleOf(c.e, dc)
		if c.want == "" && got != "" || c.want != "" && (!strings.HasPrefix(got, TroubleNote) || !strings.Contains(got, c.want)) {
			t.Errorf("the mirror says %q, want %q", got, c.want)
		}
	}
}
