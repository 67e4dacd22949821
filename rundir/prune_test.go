package rundir

import (
	"github.com/flowrun/flow/engine/record"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRemoveRunsBefore: flow gc --older-than removes the ended runs that
// started before the date, and leaves newer runs and running ones.
func TestRemoveRunsBefore(t *testing.T) {
	runs := t.TempDir()
	ok := true
	for id, started := range map[string]time.Time{"old": time.Now().Add(-48 * time.Hour), "new": time.Now()} {
		w, err := Create(runs, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Fact(&record.Fact{Type: record.FactRun, Time: started, Status: record.StatusRunning, Flow: "f"}); err != nil {
			t.Fatal(err)
		}
		if err := w.Fact(&record.Fact{Type: record.FactRun, Time: started, Status: record.StatusSucceeded, OK: &ok}); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	w, err := Create(runs, "live") // holds its lock: running
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Fact(&record.Fact{Type: record.FactRun, Time: time.Now().Add(-72 * time.Hour), Status: record.StatusRunning, Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	before, err := ParseOlderThan("24h", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	gone, err := RemoveRunsBefore(runs, before, false)
	if err != nil || len(gone) != 1 || gone[0].ID != "old" {
		t.Fatalf("removed %v (%v), want only the old run", gone, err)
	}
	for id, want := range map[string]bool{"old": false, "new": true, "live": true} {
		if _, err := os.Stat(filepath.Join(runs, id)); (err == nil) != want {
			t.Errorf("run %s there: %v, want %v", id, err == nil, want)
		}
	}
	if _, err := ParseOlderThan("soon", time.Now()); err == nil {
		t.Error("--older-than soon was taken")
	}
}
