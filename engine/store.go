package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// store is one run directory (SPEC 5). Its files are append-only where the
// spec says so and each fact is one write(2), so a crash never leaves more
// than a torn last line.
type store struct {
	dir       string
	mu        sync.Mutex // serialises journal and events writes
	journal   *os.File
	events    *os.File
	noJournal bool
}

// NewRunID returns a sortable, unique run id: time, then randomness.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Lock is the content of lock.json: who runs the run.
type Lock struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
}

func createStore(dir string, noJournal bool) (*store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	host, _ := os.Hostname()
	lock, _ := json.Marshal(Lock{PID: os.Getpid(), Host: host})
	lf, err := os.OpenFile(filepath.Join(dir, "lock.json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("run directory %s is locked by another process", dir)
		}
		return nil, fmt.Errorf("locking run directory: %w", err)
	}
	_, err = lf.Write(lock)
	if cerr := lf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing lock: %w", err)
	}
	s := &store{dir: dir, noJournal: noJournal}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if s.journal, err = os.OpenFile(filepath.Join(dir, "journal.jsonl"), flags, 0o644); err != nil {
		return nil, fmt.Errorf("opening journal: %w", err)
	}
	if s.events, err = os.OpenFile(filepath.Join(dir, "events.jsonl"), flags, 0o644); err != nil {
		_ = s.journal.Close()
		return nil, fmt.Errorf("opening events: %w", err)
	}
	return s, nil
}

// fact appends one journal line. The line is on disk (in the kernel's page
// cache, which survives the engine's death) before fact returns.
func (s *store) fact(v any) error {
	if s.noJournal {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding journal fact: %w", err)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.journal.Write(b); err != nil {
		return fmt.Errorf("writing journal: %w", err)
	}
	return nil
}

// event appends one line to events.jsonl.
func (s *store) event(e *Event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = append(b, '\n')
	s.mu.Lock()
	_, _ = s.events.Write(b)
	s.mu.Unlock()
}

func (s *store) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	tmp := filepath.Join(s.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// close syncs and closes the files and removes the lock. It is idempotent.
func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, f := range []**os.File{&s.journal, &s.events} {
		if *f == nil {
			continue
		}
		errs = append(errs, (*f).Sync(), (*f).Close())
		*f = nil
	}
	if err := os.Remove(filepath.Join(s.dir, "lock.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// home returns (and creates) the home directory of a visit or memory scope.
func (s *store) home(path string) (string, error) {
	dir := filepath.Join(s.dir, "home", filepath.FromSlash(path))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating home %s: %w", path, err)
	}
	return dir, nil
}
