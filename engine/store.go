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
	"syscall"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/flows"
)

// store is one run directory (SPEC 5). Its files are append-only where the
// spec says so, and each fact reaches the page cache whole before the visit
// goes on, so a crash never leaves more than a torn last line.
type store struct {
	dir       string
	abs       string     // dir made absolute: homes are handed to programs that run elsewhere
	mu        sync.Mutex // guards the record; taken before jmu where both are
	jmu       sync.Mutex // serialises journal writes and guards journal
	journal   *journalFile
	sealing   conc.WaitGroup // the journal's close, after seal
	sealErr   error          // how it went; read after sealing.Wait
	events    *eventLog
	noJournal bool
	// The record report.html is rendered from while the run goes on, not
	// the journal read back; kept with the journal off too. Guarded by mu.
	runs   []*Fact        // the run facts, of earlier attempts too
	visits []visitRow     // in the order the visits first started
	rows   map[string]int // on resume: the row of each visit of earlier attempts
	// unflushed is the first row whose start may not be journaled yet.
	unflushed int
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

// openStore opens a run directory: a new one, or (resume) one that exists.
func openStore(dir string, resume, noJournal bool) (*store, error) {
	if resume {
		if _, err := os.Stat(filepath.Join(dir, "journal.jsonl")); err != nil {
			return nil, fmt.Errorf("resuming %s: %w", dir, err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding the run directory: %w", err)
	}
	if err := acquireLock(dir); err != nil {
		return nil, err
	}
	s := &store{dir: dir, abs: abs, noJournal: noJournal}
	journal := filepath.Join(dir, "journal.jsonl")
	if noJournal {
		err = os.WriteFile(journal, nil, 0o644) // there, and empty
	} else {
		s.journal, err = openJournalFile(journal)
	}
	if err != nil {
		_ = s.close()
		return nil, fmt.Errorf("opening journal: %w", err)
	}
	if s.events, err = openEventLog(filepath.Join(dir, "events.jsonl")); err != nil {
		_ = s.close()
		return nil, fmt.Errorf("opening events: %w", err)
	}
	return s, nil
}

// visitRow is a visit as the store keeps it for report.html, and whether
// its start fact is in the journal yet. A leaf's start fact is made only
// if it is journaled: until then the row holds what it would say.
type visitRow struct {
	Visit     // Start is nil for a leaf whose start is not journaled
	started   time.Time
	path      string
	node      *flows.Node
	journaled bool
}

// startFact returns the row's start fact, made if it has none yet.
func (v *visitRow) startFact() *Fact {
	if v.Start == nil {
		v.Start = &Fact{Type: "start", Time: v.started, Visit: v.path, Node: v.node.ID, Kind: string(v.node.Kind)}
	}
	return v.Start
}

// fact appends a run fact to the journal. The line is in the kernel's page
// cache, which survives the engine's death, before fact returns.
func (s *store) fact(f *Fact) error {
	s.mu.Lock()
	s.runs = append(s.runs, f)
	s.mu.Unlock()
	s.jmu.Lock()
	defer s.jmu.Unlock()
	return s.journalFact(f)
}

// begin records that a visit of n at path started, and returns its row
// for end.
//
// A block's start is journaled at once. A leaf's is journaled only if the
// leaf is still running at the next flushStarts (every flushEvery): a leaf
// that ends before has only its end fact, which names its kind and wall
// time. Resume needs only end facts, and most leaves end quickly; a start
// fact is for showing a visit that runs. Blocks are journaled at once so
// that a block comes before its children in the journal.
func (s *store) begin(started time.Time, n *flows.Node, path string, leaf bool) (int, error) {
	s.mu.Lock()
	v := visitRow{started: started, path: path, node: n, journaled: !leaf}
	row, again := s.rows[path]
	if again {
		delete(s.rows, path) // an earlier attempt's visit, running again
		s.visits[row] = v
		s.unflushed = min(s.unflushed, row)
	} else {
		row = len(s.visits)
		s.visits = append(s.visits, v)
	}
	var start *Fact
	if !leaf {
		start = s.visits[row].startFact()
	}
	s.mu.Unlock()
	if leaf {
		return row, nil
	}
	s.jmu.Lock()
	defer s.jmu.Unlock()
	return row, s.journalFact(start)
}

// end journals that the visit begun at row ended. The fact is encoded
// under the journal's lock, straight into the journal, unless another
// visit holds the lock (the items of a map end together): then it is
// encoded while waiting, and only copied in under the lock.
func (s *store) end(row int, f *Fact) error {
	s.mu.Lock()
	s.visits[row].End = f
	s.mu.Unlock()
	if s.jmu.TryLock() {
		defer s.jmu.Unlock()
		return s.journalFact(f)
	}
	var line *[]byte
	if !s.noJournal {
		line = lineBuffers.Get().(*[]byte)
		defer release(line)
		var err error
		if *line, err = appendFact((*line)[:0], f); err != nil {
			line = nil // journalFact says what is wrong
		}
	}
	s.jmu.Lock()
	defer s.jmu.Unlock()
	if line == nil || s.journal == nil {
		return s.journalFact(f)
	}
	s.journal.shared()
	return s.journal.append(*line)
}

// flushStarts journals the start facts of leaves still running.
func (s *store) flushStarts() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The journal's lock is held too: a leaf that ends meanwhile waits
	// for mu to record its end, so its start is journaled before its end.
	s.jmu.Lock()
	defer s.jmu.Unlock()
	var errs []error
	for i := s.unflushed; i < len(s.visits); i++ {
		v := &s.visits[i]
		if v.journaled || v.End != nil {
			if i == s.unflushed {
				s.unflushed++ // settled: never looked at again
			}
			continue
		}
		errs = append(errs, s.journalFact(v.startFact()))
		v.journaled = true
	}
	return errors.Join(errs...)
}

// journalFact writes f to the journal; s.jmu is held. A fact is encoded
// under the lock, straight into the journal where there is room.
func (s *store) journalFact(f *Fact) error {
	switch {
	case s.noJournal:
		return nil
	case s.journal == nil:
		return errors.New("writing journal: the run directory is closed")
	}
	return s.journal.appendFact(f)
}

// lineBuffers hold facts and events while they are encoded: events outside
// the store's locks, facts too long to encode straight into the journal.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// release returns a buffer to lineBuffers, unless a big value made it too
// big to keep.
func release(line *[]byte) {
	if cap(*line) <= 64<<10 {
		lineBuffers.Put(line)
	}
}

// remember takes the facts of earlier attempts into the record, for a
// resume: their visits keep their rows.
func (s *store) remember(facts []*Fact) {
	s.mu.Lock()
	defer s.mu.Unlock()
	runs, visits := records(facts)
	s.runs = runs
	s.visits = make([]visitRow, len(visits))
	s.rows = make(map[string]int, len(visits))
	for i, v := range visits {
		s.visits[i] = visitRow{Visit: v, journaled: true}
		s.rows[v.Start.Visit] = i
	}
	s.unflushed = len(s.visits)
}

// record returns the record so far, as report.html shows it. Its facts
// are never changed, so it may be read while the run goes on.
func (s *store) record() (runs []*Fact, rows []reportRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows = make([]reportRow, len(s.visits))
	for i := range s.visits {
		v := &s.visits[i]
		if v.Start != nil {
			rows[i] = v.Visit.reportRow()
		} else {
			rows[i] = reportRow{start: v.started, path: v.path, kind: string(v.node.Kind), end: v.End}
		}
	}
	return s.runs[:len(s.runs):len(s.runs)], rows
}

// event appends one line to events.jsonl.
func (s *store) event(e *Event) {
	line := lineBuffers.Get().(*[]byte)
	defer release(line)
	*line = appendEvent((*line)[:0], e)
	s.events.add(*line)
}

func (s *store) flushEvents() { s.events.flush() }

// writeJSON writes a file whole, as one line: it is mostly the flows'
// source text, which indenting would only copy again (jq . shows it
// indented).
func (s *store) writeJSON(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	return s.writeFile(name, append(b, '\n'))
}

// writeFile writes a file of the run directory whole (see writeAside).
func (s *store) writeFile(name string, b []byte) error {
	err := writeAside(filepath.Join(s.dir, name), func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// seal ends the journal: no fact is written after it. The file is synced
// and closed in the background, while the run writes its report; close
// waits for it.
func (s *store) seal() {
	s.jmu.Lock()
	j := s.journal
	s.journal = nil
	s.jmu.Unlock()
	if j != nil {
		s.sealing.Go(func() { s.sealErr = j.close() })
	}
}

// close closes the files and removes the lock. It is idempotent.
func (s *store) close() error {
	var errs []error
	if s.events != nil {
		errs = append(errs, s.events.close())
	}
	s.seal()
	s.sealing.Wait()
	errs = append(errs, s.sealErr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(filepath.Join(s.dir, "lock.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// home returns the path of the home directory of a visit or memory scope.
// It is not created here: whoever writes there first creates it.
func (s *store) home(path string) string {
	// Visit paths are clean: node ids joined by slashes, never empty.
	return s.abs + string(filepath.Separator) + "home" + string(filepath.Separator) + filepath.FromSlash(path)
}

// ErrLocked is returned when another live process holds the run.
var ErrLocked = errors.New("the run is held by another live process")

// acquireLock creates lock.json exclusively. A lock left by a dead process
// on this host is taken over; the takeover itself is exclusive (a
// lock.json.takeover file), so two resumers cannot both win.
func acquireLock(dir string) error {
	path := filepath.Join(dir, "lock.json")
	host, _ := os.Hostname()
	mine, _ := json.Marshal(Lock{PID: os.Getpid(), Host: host})
	for range 3 {
		err := createWhole(path, mine)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("locking run directory: %w", err)
		}
		held, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile: try again
		}
		var l Lock
		if json.Unmarshal(held, &l) == nil {
			if l.Host != host {
				return fmt.Errorf("%w: pid %d on host %s (remove %s if that host is gone)", ErrLocked, l.PID, l.Host, path)
			}
			if alive(l.PID) {
				return fmt.Errorf("%w: pid %d", ErrLocked, l.PID)
			}
		}
		if err := takeOver(path, held); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: the lock keeps changing", ErrLocked)
}

// createWhole creates path with content, failing with fs.ErrExist if it
// exists. The file appears with its whole content at once (written aside,
// then hard-linked), so no reader ever sees an empty lock and takes it for
// a stale one.
func createWhole(path string, content []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(tmp)+"*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(f.Name(), path)
}

// takeOver removes a stale lock, provided it still holds what was read.
func takeOver(path string, stale []byte) error {
	tk := path + ".takeover"
	f, err := os.OpenFile(tk, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("%w: another process is taking the run over", ErrLocked)
	}
	defer func() { _ = f.Close(); _ = os.Remove(tk) }()
	now, err := os.ReadFile(path)
	if err != nil || string(now) != string(stale) {
		return nil // changed meanwhile: the caller looks again
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale lock: %w", err)
	}
	return nil
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// dropTornLine cuts a journal back to its last whole line: the engine that
// wrote it died mid-write, and new facts must not be glued to the fragment.
func dropTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	size := st.Size()
	const chunk = 64 << 10
	buf := make([]byte, min(size, chunk))
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return fmt.Errorf("reading journal: %w", err)
		}
		if i := lastNewline(buf[:n]); i >= 0 {
			keep := start + int64(i) + 1
			if keep == size {
				return nil
			}
			if err := f.Truncate(keep); err != nil {
				return fmt.Errorf("cutting the torn journal line: %w", err)
			}
			return nil
		}
		end = start
	}
	return f.Truncate(0)
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}
