package rundir

import (
	"reflect"
	"strings"
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
		TemporalRun{}, SnapshotFlow{}, Settings{}, Usage{}, Totals{}, Worktree{}, Scope{}} {
		for _, k := range JSONKeys(reflect.TypeOf(v)) {
			if len(k) >= secret.MinLen && !secret.FlowWord(k) {
				t.Errorf("%T writes the key %q, which secret.FlowWord does not know", v, k)
			}
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

// JSONKeys returns the JSON keys of the struct type t and of the structs it
// holds.
func JSONKeys(t reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	var keys []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" && !f.Anonymous {
				name = f.Name
			}
			if name != "" {
				keys = append(keys, name)
			}
			walk(f.Type)
		}
	}
	walk(t)
	return keys
}
