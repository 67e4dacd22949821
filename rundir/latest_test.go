package rundir

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Latest finds what List's first match is, reading only the newest runs:
// a run older than the match is never read.
func TestLatestReadsOnlyTheNewest(t *testing.T) {
	runs := t.TempDir()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	mk := func(at time.Time, flow string) string {
		w, err := Create(runs, NewRunID(at))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []*Fact{{Type: FactRun, Time: at, Flow: flow, Status: StatusRunning}, {Type: FactRun, Time: at.Add(time.Second), Status: StatusSucceeded}} {
			if err := w.Fact(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return w.ID()
	}
	old := mk(t0, "f")
	want := mk(t0.Add(time.Hour), "f")
	mk(t0.Add(2*time.Hour), "g")
	var read []string
	inspectRun = func(dir string) (*RunInfo, error) { read = append(read, filepath.Base(dir)); return Inspect(dir) }
	defer func() { inspectRun = Inspect }()
	got, err := Latest(runs, func(r *RunInfo) bool { return r.Flow == "f" })
	if err != nil || got == nil || got.ID != want {
		t.Fatalf("Latest: %+v, %v; want run %s", got, err, want)
	}
	if slices.Contains(read, old) || len(read) != 2 {
		t.Errorf("Latest read %v, want only the two newest runs", read)
	}
	all, _ := List(runs)
	var first *RunInfo
	for _, r := range all {
		if r.Flow == "f" {
			first = r
			break
		}
	}
	if first == nil || first.ID != got.ID {
		t.Errorf("List's first run of f is %+v, Latest's %s", first, got.ID)
	}
}
