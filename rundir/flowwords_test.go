package rundir

import (
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/schema"
)

// TestFlowWordsKnowEveryKey: every JSON key of MinLen bytes or more that
// the run directory's files carry is a word secret refuses to take for a
// secret, so that no secret's value can be matched inside flow's own
// keys.
func TestFlowWordsKnowEveryKey(t *testing.T) {
	t.Parallel()
	for _, v := range []any{record.Event{}, record.Fact{}, record.Answer{}, record.Failure{}, KeptWorktree{}, RunInfo{}, Lock{}, Snapshot{},
		TemporalRun{}, SnapshotFlow{}, Settings{}, record.Usage{}, Totals{}, record.Worktree{}, record.Scope{}, RemoteHome{}} {
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
	for _, v := range []string{string(record.EventRunStart), string(record.EventRunEnd), string(record.EventVisitStart), string(record.EventVisitEnd),
		string(record.EventVisitReplayed), string(record.EventProgress), string(record.EventNote), string(record.FactRun), string(record.FactStart), string(record.FactEnd),
		string(record.FactWorktree), string(record.FactLand), string(record.StatusRunning), string(record.StatusSucceeded), string(record.StatusFailed),
		string(record.StatusStopped), string(record.StatusInterrupted), string(record.StatusCorrupt), string(schema.FailProvider),
		string(schema.FailTimeout), string(schema.FailSchema), string(schema.FailStopped), string(schema.FailCancelled),
		string(schema.FailChild), string(schema.FailUnconverged), string(schema.FailCondition), string(schema.FailTooMany),
		string(schema.FailUnavailable), string(schema.FailBudget), string(schema.FailRefused), string(schema.FailConflict)} {
		if len(v) >= secret.MinLen && !secret.FlowWord(v) {
			t.Errorf("the run directory writes %q, which secret.FlowWord does not know", v)
		}
	}
}
