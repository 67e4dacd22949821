package engine

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
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
