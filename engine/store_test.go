package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A lock left by a dead process is taken over, and only one of several
// racing resumers wins it.
func TestStaleLockTakeoverIsExclusive(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	stale, _ := json.Marshal(Lock{PID: 1 << 30, Host: host}) // no such pid
	if err := os.WriteFile(filepath.Join(dir, "lock.json"), stale, 0o644); err != nil {
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
	if err := os.WriteFile(filepath.Join(dir, "lock.json"), other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := acquireLock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lock of another host must be respected, got %v", err)
	}
}

// Facts written from many goroutines at once share writes, and every one
// of them is on disk, whole and once, when fact returns.
func TestGroupCommitLosesNothing(t *testing.T) {
	st, err := openStore(t.TempDir(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				visit := fmt.Sprintf("w%d[%d]", w, i)
				ok := true
				if err := st.begin(&Fact{Type: "start", Time: time.Now(), Visit: visit}); err != nil {
					t.Error(err)
				}
				if err := st.fact(&Fact{Type: "end", Time: time.Now(), Visit: visit, OK: &ok, Output: visit}); err != nil {
					t.Error(err)
				}
				// What fact returned for is on disk now.
				if i == each-1 {
					facts, err := ReadJournal(st.dir)
					if err != nil {
						t.Error(err)
					}
					if !slices.ContainsFunc(facts, func(f Fact) bool { return f.Type == "end" && f.Visit == visit }) {
						t.Errorf("%s returned before its fact was written", visit)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	facts, err := ReadJournal(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range facts {
		seen[f.Type+" "+f.Visit]++
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
