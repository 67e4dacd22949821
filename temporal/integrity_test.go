package temporal

import (
	"context"
	"sync/atomic"
	"testing"

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
