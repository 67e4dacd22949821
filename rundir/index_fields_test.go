package rundir

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// Every field of RunInfo that is not read live survives the index: a line
// is RunInfo's own encoding, so a field added to RunInfo is listed by
// flow runs from the index with no more code. The live fields are read
// again from the run directory (indexEntry.info). A field added to RunInfo
// must be filled here, or the test says so.
func TestIndexKeepsEveryField(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 2, 0, 0, time.UTC)
	until := at.Add(time.Hour)
	in := &RunInfo{
		ID: "20261203-140200-abcdef", Dir: "/x", Flow: "review", Status: record.StatusSucceeded,
		Started: at, Ended: at.Add(time.Minute), WallMS: 60000,
		Usage:     record.Usage{Input: new(int64(3)), Output: new(int64(4))},
		Failure:   &record.Failure{Kind: "timeout", Message: "m", Visit: "a"},
		Resumable: true, Why: "w",
		Worktrees:   []*record.Worktree{{Path: "/no/such/worktree"}},
		Overspend:   []record.Overspend{{Budget: "flow review", Tokens: 9, Why: "w"}},
		InfraInTree: true,
		ForkedFrom:  &record.Fork{Run: "r", Visit: "v"},
		Waiting:     []WaitingOn{{Visit: "deploy", Wait: record.Wait{Event: "done", Since: at, Until: &until}}},
		Facts:       []*record.Fact{{}},
	}
	live := []string{"Dir", "WallMS", "Resumable", "Why", "Worktrees", "Facts"}
	rv := reflect.ValueOf(in).Elem()
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("RunInfo.%s is not filled in this test: fill it, and keep it in the index unless it is read live", rv.Type().Field(i).Name)
		}
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(newEntry(in, journalVersion{size: 1, mtime: 2})); err != nil {
		t.Fatal(err)
	}
	var e indexEntry
	if err := json.Unmarshal(buf.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	out := e.info(t.TempDir())
	ov := reflect.ValueOf(out).Elem()
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if slices.Contains(live, name) {
			continue
		}
		if !reflect.DeepEqual(ov.Field(i).Interface(), rv.Field(i).Interface()) {
			t.Errorf("RunInfo.%s came back from the index as %#v, want %#v", name, ov.Field(i).Interface(), rv.Field(i).Interface())
		}
	}
	if e.Size != 1 || e.MTime != 2 || len(e.Kept) != 1 {
		t.Errorf("the line kept size %d, mtime %d, %d kept worktrees; want 1, 2, 1", e.Size, e.MTime, len(e.Kept))
	}
}
