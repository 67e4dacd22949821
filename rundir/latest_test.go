package rundir

import (
	"encoding/json"
	"github.com/flowrun/flow/engine/record"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// mkRun writes a run of flow under runs that started at and ended with
// status, closing it as a run does.
func mkRun(t testing.TB, runs string, at time.Time, flow string, status record.Status) string {
	t.Helper()
	w, err := Create(runs, NewRunID(at))
	if err != nil {
		t.Fatal(err)
	}
	facts := []*record.Fact{{Type: record.FactRun, Time: at, Flow: flow, Status: record.StatusRunning}}
	if status != record.StatusInterrupted {
		facts = append(facts, &record.Fact{Type: record.FactRun, Time: at.Add(time.Second), Status: status})
	}
	for _, f := range facts {
		if err := w.Fact(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

// countReads makes inspectRun record the runs read from their journals.
func countReads(t *testing.T) *[]string {
	var mu sync.Mutex
	read := new([]string)
	inspectRun = func(dir string) (*RunInfo, error) {
		mu.Lock()
		*read = append(*read, filepath.Base(dir))
		mu.Unlock()
		return Inspect(dir)
	}
	t.Cleanup(func() { inspectRun = Inspect })
	return read
}

// Latest finds what List's first match is from the index: with the runs
// closed by their Writers, it reads no journal at all.
func TestLatestReadsNoJournal(t *testing.T) {
	runs := t.TempDir()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	mkRun(t, runs, t0, "f", record.StatusSucceeded)
	want := mkRun(t, runs, t0.Add(time.Hour), "f", record.StatusSucceeded)
	for i := range 20 {
		mkRun(t, runs, t0.Add(2*time.Hour+time.Duration(i)*time.Second), "g", record.StatusSucceeded)
	}
	read := countReads(t)
	got, err := Latest(runs, func(r *RunInfo) bool { return r.Flow == "f" })
	if err != nil || got == nil || got.ID != want {
		t.Fatalf("Latest: %+v, %v; want run %s", got, err, want)
	}
	if len(*read) != 0 {
		t.Errorf("Latest read the journals of %v, want none: the index has every run", *read)
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

// Latest reads runs newest first and stops at the newest match: of the
// runs older than it, at most the rest of the last batch it read is read
// (here their summaries are gone, so a read goes to their journals). Within one second the later start
// wins; a run whose id is not a time (a Temporal Schedule's) counts by its
// start.
func TestLatestStopsAtTheNewestMatch(t *testing.T) {
	runs := t.TempDir()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for i := range 3 * latestBatch {
		id := mkRun(t, runs, t0.Add(time.Duration(i)*time.Second), "f", record.StatusSucceeded)
		if err := os.Remove(filepath.Join(runs, id, summaryFile)); err != nil {
			t.Fatal(err)
		}
	}
	mkRun(t, runs, t0.Add(time.Hour), "f", record.StatusSucceeded)
	want := mkRun(t, runs, t0.Add(time.Hour+500*time.Millisecond), "f", record.StatusSucceeded) // the same second, later
	for i := range 40 {
		mkRun(t, runs, t0.Add(2*time.Hour+time.Duration(i)*time.Second), "g", record.StatusSucceeded)
	}
	read := countReads(t)
	got, err := Latest(runs, func(r *RunInfo) bool { return r.Flow == "f" })
	if err != nil || got == nil || got.ID != want {
		t.Fatalf("Latest: %+v, %v; want run %s", got, err, want)
	}
	if len(*read) >= latestBatch {
		t.Errorf("Latest read %d runs older than the newest match, want fewer than one batch (%d)", len(*read), latestBatch)
	}
	// A run named otherwise that started later is newer still.
	w, err := Create(runs, "flow-abc123-f-20260102T170000Z")
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(2 * time.Hour)
	for _, f := range []*record.Fact{{Type: record.FactRun, Time: at, Flow: "f", Status: record.StatusRunning}, {Type: record.FactRun, Time: at.Add(time.Second), Status: record.StatusSucceeded}} {
		if err := w.Fact(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := Latest(runs, func(r *RunInfo) bool { return r.Flow == "f" }); err != nil || got == nil || got.ID != w.ID() {
		t.Fatalf("Latest: %+v, %v; want the Schedule's run %s, which started last", got, err, w.ID())
	}
}

// The index is a cache: removed, it is rebuilt by the next reader (which
// reads every journal once); a run whose journal changed after its line
// was written (resumed, appended to, replaced) is read again; a torn line
// is skipped. Whatever the index holds, Summaries says what List says.
func TestIndexRebuiltWhenMissingOrStale(t *testing.T) {
	runs := t.TempDir()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	var ids []string
	for i, st := range []record.Status{record.StatusSucceeded, record.StatusFailed, record.StatusInterrupted, record.StatusSucceeded} {
		ids = append(ids, mkRun(t, runs, t0.Add(time.Duration(i)*time.Minute), "f", st))
	}
	for _, id := range ids {
		if err := os.Remove(filepath.Join(runs, id, summaryFile)); err != nil {
			t.Fatal(err)
		}
	}
	read := countReads(t)
	same(t, runs)
	if len(*read) != len(ids) {
		t.Fatalf("without an index Summaries read %v, want all %d runs", *read, len(ids))
	}
	*read = nil
	same(t, runs)
	if len(*read) != 0 {
		t.Fatalf("after the rebuild Summaries read %v, want none", *read)
	}
	// The third run is resumed and succeeds: its journal grows.
	w, _, err := Reopen(filepath.Join(runs, ids[2]))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Fact(&record.Fact{Type: record.FactRun, Time: t0.Add(time.Hour), Status: record.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	// While the resume holds the run, the index's line is stale.
	*read = nil
	got := same(t, runs)
	if len(*read) != 1 || (*read)[0] != ids[2] || got[ids[2]] != record.StatusSucceeded {
		t.Fatalf("during the resume Summaries read %v and says %v, want only %s read, succeeded", *read, got, ids[2])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A journal changed behind flow's back (no Writer) is read again.
	j := filepath.Join(runs, ids[0], journalFile)
	b, _ := os.ReadFile(j)
	b = append(b, []byte(`{"type":"run","time":"2026-01-02T16:00:00Z","status":"failed"}`+"\n")...)
	if err := os.WriteFile(j, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A torn summary is one that is not there.
	if err := os.WriteFile(filepath.Join(runs, ids[3], summaryFile), []byte(`{"id":"`+ids[3]+`","flow":"torn`), 0o644); err != nil {
		t.Fatal(err)
	}
	*read = nil
	got = same(t, runs)
	slices.Sort(*read)
	if want := []string{ids[0], ids[3]}; !slices.Equal(*read, want) || got[ids[0]] != record.StatusFailed {
		t.Fatalf("Summaries read %v and says %v, want %v read, %s failed", *read, got, want, ids[0])
	}
	*read = nil
	same(t, runs)
	if len(*read) != 0 {
		t.Fatalf("after the second rebuild Summaries read %v, want none", *read)
	}
}

// same checks that Summaries says what List says, without the facts, and
// returns the statuses by run.
func same(t *testing.T, runs string) map[string]record.Status {
	t.Helper()
	sum, err := Summaries(runs)
	if err != nil {
		t.Fatal(err)
	}
	saved := inspectRun
	inspectRun = Inspect
	all, err := List(runs)
	inspectRun = saved
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(all, sum...) {
		r.Facts = nil
		if r.Ended.IsZero() { // counted to now
			r.WallMS = 0
		}
	}
	a, _ := json.Marshal(all)
	b, _ := json.Marshal(sum)
	if string(a) != string(b) {
		t.Fatalf("Summaries:\n%s\nList:\n%s", b, a)
	}
	out := map[string]record.Status{}
	for _, r := range sum {
		out[r.ID] = r.Status
	}
	return out
}

// Runs that end at the same time each write their own summary: every
// run is then read from it.
func TestIndexConcurrentRuns(t *testing.T) {
	runs := t.TempDir()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() { mkRun(t, runs, t0.Add(time.Duration(i)*time.Second), "f", record.StatusSucceeded) })
	}
	wg.Wait()
	read := countReads(t)
	got := same(t, runs)
	if len(*read) != 0 || len(got) != 32 {
		t.Errorf("Summaries read %v and found %d runs, want none read of 32", *read, len(got))
	}
}

// BenchmarkLatest200 is what flow run --reuse spends finding the run to
// reuse among 200 earlier runs, 100 of another flow after those of its own:
// their summaries, no journal (BenchmarkLatest200NoIndex: every journal).
func BenchmarkLatest200(b *testing.B)        { benchLatest(b, false) }
func BenchmarkLatest200NoIndex(b *testing.B) { benchLatest(b, true) }

func benchLatest(b *testing.B, noIndex bool) {
	runs := b.TempDir()
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for i := range 200 {
		flow := "f"
		if i >= 100 {
			flow = "g"
		}
		mkRun(b, runs, t0.Add(time.Duration(i)*time.Second), flow, record.StatusSucceeded)
	}
	for b.Loop() {
		if noIndex {
			b.StopTimer()
			matches, _ := filepath.Glob(filepath.Join(runs, "*", summaryFile))
			for _, m := range matches {
				_ = os.Remove(m)
			}
			b.StartTimer()
		}
		r, err := Latest(runs, func(r *RunInfo) bool { return r.Flow == "f" })
		if err != nil || r == nil {
			b.Fatal(r, err)
		}
	}
}
