package temporal

import (
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestHistoryFromBeforeContinueAsNewReplays replays a run's history
// recorded by the workflow before continue-as-new (an agent turn, a map of
// three commands, a command reading the turn): the change is versioned,
// so a run in flight across an upgrade goes on.
func TestHistoryFromBeforeContinueAsNewReplays(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(quiet{}, "testdata/history-before-continue-as-new.json"); err != nil {
		t.Fatalf("a history from before continue-as-new does not replay: %v", err)
	}
}
