package rundir

import (
	"os"
	"testing"
)

// A run directory whose journal is still empty — its walk started on
// Temporal and its first fact was not mirrored yet when the process that
// made it died — is reopened by its resume: Reopen takes the lock once,
// not a second time against itself.
func TestReopenAnEmptyJournal(t *testing.T) {
	t.Parallel()
	w, err := Create(t.TempDir(), "20260101-000000-aaaaaa")
	if err != nil {
		t.Fatal(err)
	}
	dir := w.Dir()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir + "/journal.jsonl"); err != nil || st.Size() != 0 {
		t.Fatalf("the journal should be there and empty: %v", err)
	}
	w, facts, err := Reopen(dir)
	if err != nil {
		t.Fatalf("reopening a run with an empty journal: %v", err)
	}
	if len(facts) != 0 {
		t.Fatalf("%d facts", len(facts))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/lock.json"); !os.IsNotExist(err) {
		t.Fatalf("the lock is left behind: %v", err)
	}
}
