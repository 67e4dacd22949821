package rundir

import (
	"testing"

	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/schema"
)

// TestFlowWordsKnowEveryKey: every JSON key of MinLen bytes or more that
// the run directory's files carry is a word secret refuses to take for a
// secret, so that no secret's value can be matched inside flow's own
// keys.
func TestFlowWordsKnowEveryKey(t *testing.T) {
	t.Parallel()
	for _, v := range []any{Event{}, Fact{}, Answer{}, Failure{}, KeptWorktree{}, RunInfo{}, Lock{}, Snapshot{},
		TemporalRun{}, SnapshotFlow{}, Settings{}, Usage{}, Totals{}, Worktree{}, Scope{}, RemoteHome{}} {
		for _, k := range secret.UnknownKeys(v) {
			t.Errorf("%T writes the key %q, which secret.FlowWord does not know", v, k)
		}
	}
}

// TestFlowWordsKnowEveryFixedValue: the values the run directory writes
// from a fixed set (statuses, fact and event types, failure kinds) are
// words secret refuses too.
func TestFlowWordsKnowEveryFixedValue(t *testing.T) {
	t.Parallel()
	for _, v := range []string{string(EventRunStart), string(EventRunEnd), string(EventVisitStart), string(EventVisitEnd),
		string(EventVisitReplayed), string(EventProgress), string(EventNote), string(FactRun), string(FactStart), string(FactEnd),
		string(FactWorktree), string(FactLand), string(StatusRunning), string(StatusSucceeded), string(StatusFailed),
		string(StatusStopped), string(StatusInterrupted), string(StatusCorrupt), string(schema.FailProvider),
		string(schema.FailTimeout), string(schema.FailSchema), string(schema.FailStopped), string(schema.FailCancelled),
		string(schema.FailChild), string(schema.FailUnconverged), string(schema.FailCondition), string(schema.FailTooMany),
		string(schema.FailUnavailable), string(schema.FailBudget), string(schema.FailRefused), string(schema.FailConflict)} {
		if len(v) >= secret.MinLen && !secret.FlowWord(v) {
			t.Errorf("the run directory writes %q, which secret.FlowWord does not know", v)
		}
	}
}
