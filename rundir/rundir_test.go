package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// A lock left by a dead process is taken over, and only one of several
// racing resumers wins it.
func TestStaleLockTakeoverIsExclusive(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	stale, _ := json.Marshal(Lock{PID: 1 << 30, Host: host}) // no such pid
	if err := os.WriteFile(filepath.Join(dir, lockFile), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	var wins, locked atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			err := acquireLock(dir)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrLocked):
				locked.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || locked.Load() != 7 {
		t.Fatalf("%d resumers won the lock and %d were refused; want 1 and 7", wins.Load(), locked.Load())
	}
}

func TestLockOfAnotherHostIsNotTakenOver(t *testing.T) {
	dir := t.TempDir()
	other, _ := json.Marshal(Lock{PID: 1 << 30, Host: "elsewhere.example"})
	if err := os.WriteFile(filepath.Join(dir, lockFile), other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := acquireLock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lock of another host must be respected, got %v", err)
	}
}

// A run directory is created exclusively: a taken id is an error, never a
// directory shared by two runs.
func TestCreateIsExclusive(t *testing.T) {
	runs := t.TempDir()
	w, err := Create(runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := Create(runs, "r1"); err == nil {
		t.Fatal("a second run took the directory of the first")
	}
	w2, err := Create(runs, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if w2.ID() == "" || w2.ID() == "r1" {
		t.Fatalf("fresh id %q", w2.ID())
	}
}

// Facts written from many goroutines at once are each in the journal,
// whole and once, when Fact returns.
func TestConcurrentFactsLoseNothing(t *testing.T) {
	w, err := Create(t.TempDir(), "r")
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 300
	var wg sync.WaitGroup
	for n := range workers {
		wg.Go(func() {
			for i := range each {
				visit := fmt.Sprintf("w%d[%d]", n, i)
				ok := true
				if err := w.Fact(&record.Fact{Type: record.FactStart, Time: time.Now(), Visit: visit, Kind: schema.KindRun}); err != nil {
					t.Error(err)
				}
				if err := w.Fact(&record.Fact{Type: record.FactEnd, Time: time.Now(), Visit: visit, OK: &ok, Output: visit}); err != nil {
					t.Error(err)
				}
				if i == each-1 { // what Fact returned for is in the journal now
					facts, err := ReadJournal(w.Dir())
					if err != nil {
						t.Error(err)
					}
					if !slices.ContainsFunc(facts, func(f *record.Fact) bool { return f.Type == record.FactEnd && f.Visit == visit }) {
						t.Errorf("%s returned before its fact was written", visit)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	facts, err := ReadJournal(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range facts {
		seen[string(f.Type)+" "+f.Visit]++
	}
	if len(facts) != 2*workers*each {
		t.Fatalf("%d facts in the journal, want %d", len(facts), 2*workers*each)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s written %d times", k, n)
		}
	}
}

// The journal is JSONL at every moment: every line, read while the run
// writes, parses, and there is never a NUL byte.
func TestJournalIsJSONLWhileWritten(t *testing.T) {
	w, err := Create(t.TempDir(), "r")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range 2000 {
			ok := true
			_ = w.Fact(&record.Fact{Type: record.FactEnd, Time: time.Now(), Visit: fmt.Sprint("v", i), OK: &ok, Output: strings.Repeat("é<>", i%50)})
		}
	})
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		b, err := os.ReadFile(filepath.Join(w.Dir(), journalFile))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			t.Fatal("the journal holds a NUL byte")
		}
		lines := bytes.Split(b, []byte("\n"))
		for i, l := range lines[:len(lines)-1] { // the part after the last newline may be torn
			if !json.Valid(l) {
				t.Fatalf("line %d is not JSON: %q", i+1, l)
			}
		}
	}
	wg.Wait()
}

// What a dead engine left — whole facts, then a torn line — is read to its
// last whole fact and continued by a resume after it.
func TestJournalOfADeadEngineIsContinued(t *testing.T) {
	w, err := Create(t.TempDir(), "r")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := w.Fact(&record.Fact{Type: record.FactStart, Time: time.Now(), Visit: fmt.Sprint("v", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := w.Dir()
	f, err := os.OpenFile(filepath.Join(dir, journalFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"type":"end","vis`)
	_ = f.Close()
	if facts, err := ReadJournal(dir); err != nil || len(facts) != 5 {
		t.Fatalf("read %d facts of a dead engine's journal (%v), want 5", len(facts), err)
	}
	w, earlier, err := Reopen(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(earlier) != 5 {
		t.Fatalf("Reopen returned %d earlier facts, want 5", len(earlier))
	}
	if err := w.Fact(&record.Fact{Type: record.FactRun, Time: time.Now(), Status: record.StatusRunning, Resumed: true}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, journalFile))
	if !bytes.HasSuffix(b, []byte("\"resumed\":true}\n")) {
		t.Fatalf("the resumed journal should be whole lines with the new fact last; it ends %q", b[max(0, len(b)-80):])
	}
	if facts, err := ReadJournal(dir); err != nil || len(facts) != 6 {
		t.Fatalf("read %d facts after the resume (%v), want 6", len(facts), err)
	}
}

// A bad line before the last is an error that names the file and the line.
func TestCorruptJournalNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	body := `{"type":"run","status":"running"}` + "\n" + "garbage\n" + `{"type":"start","visit":"a"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, journalFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadJournal(dir)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(err.Error(), filepath.Join(dir, journalFile)+":2") {
		t.Fatalf("ReadJournal = %v, want a CorruptError at line 2 naming the file", err)
	}
}

// usage.json counts what was not reported as null, never as 0, and every
// attempt of a visit.
func TestTallyKeepsUnreportedNull(t *testing.T) {
	in := int64(10)
	cost := 0.5
	facts := []*record.Fact{
		{Type: record.FactEnd, Visit: "a", Node: "a", Agent: "coder", Usage: &record.Usage{Input: &in, WallMS: 5}},
		{Type: record.FactEnd, Visit: "a", Node: "a", Agent: "coder", Usage: &record.Usage{Input: &in, Cost: &cost, WallMS: 5}},
		{Type: record.FactEnd, Visit: "b", Node: "b"},
	}
	got, err := json.Marshal(Tally(facts))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"total":{"input":20,"output":null,"cache_read":null,"cache_write":null,"cost":0.5,"turns":null,"wall_ms":10,"busy_ms":0},` +
		`"visits":{"a":{"input":20,"output":null,"cache_read":null,"cache_write":null,"cost":0.5,"turns":null,"wall_ms":10,"busy_ms":0}},` +
		`"nodes":{"a":{"input":20,"output":null,"cache_read":null,"cache_write":null,"cost":0.5,"turns":null,"wall_ms":10,"busy_ms":0}},` +
		`"agents":{"coder":{"input":20,"output":null,"cache_read":null,"cache_write":null,"cost":0.5,"turns":null,"wall_ms":10,"busy_ms":0}}}`
	if string(got) != want {
		t.Fatalf("usage.json\n got %s\nwant %s", got, want)
	}
}

// report.html shows every visit with its status, escapes what visits
// said, and names the visit the run failed at.
func TestReportShowsVisitsEscaped(t *testing.T) {
	w, err := Create(t.TempDir(), "r")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now := time.Now()
	yes, no := true, false
	fail := &record.Failure{Kind: schema.FailProvider, Message: "quota <exceeded>", Visit: "b"}
	for _, f := range []*record.Fact{
		{Type: record.FactRun, Time: now, Status: record.StatusRunning, Flow: "rep"},
		{Type: record.FactStart, Time: now, Visit: "a", Kind: schema.KindRun},
		{Type: record.FactEnd, Time: now, Visit: "a", Kind: schema.KindRun, OK: &yes, Output: "<script>alert(1)</script>"},
		{Type: record.FactStart, Time: now, Visit: "b", Kind: schema.KindAgent},
		{Type: record.FactEnd, Time: now, Visit: "b", Kind: schema.KindAgent, OK: &no, Error: fail},
		{Type: record.FactStart, Time: now, Visit: "c/d", Kind: schema.KindAgent},
		{Type: record.FactRun, Time: now, Status: record.StatusFailed, Error: &record.Failure{Kind: schema.FailChild, Visit: "", Cause: fail}},
	} {
		if err := w.Fact(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(w.Dir(), reportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`id="run-status">failed<`,
		`data-visit="a" data-status="ok"`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`data-visit="b" data-status="failed"`,
		`provider: quota &lt;exceeded&gt;`,
		`data-visit="c/d" data-status="running"`,
		`Failed at <code>b</code></b>: provider`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
	if strings.Contains(string(page), "<script>") {
		t.Error("report.html holds a raw script tag")
	}
}
