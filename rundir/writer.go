package rundir

import (
	"bufio"
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

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
)

// Writer is a run directory open for writing. One engine holds it, by
// lock.json, from Create or Reopen to Close. It is safe for concurrent
// use.
type Writer struct {
	dir     string // absolute: homes are handed to programs that run elsewhere
	secrets *secret.Redactor
	journal *lineFile
	events  *lineFile

	mu       sync.Mutex
	facts    []*record.Fact // every fact, earlier attempts' too: what report.html and usage.json are made of
	reportMu sync.Mutex     // one writer of report.html at a time

	stop      chan struct{} // closed by Close to end the refresher
	refresher conc.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// NewRunID returns a sortable, unique run id: time, then randomness.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Create makes the directory of a new run under runsDir and takes its
// lock. The directory is created exclusively: an id that is taken is an
// error, and with id "" a fresh id is drawn until one is free.
//
// Everything the Writer writes is redacted of secrets: the values of the
// environment variables whose names say they hold one (secret.FromEnviron)
// and secrets, the values the caller knows of (agents' and drivers' keys).
func Create(runsDir, id string, secrets ...string) (*Writer, error) {
	if err := MkdirIgnored(runsDir); err != nil {
		return nil, fmt.Errorf("creating runs directory: %w", err)
	}
	fresh := id == ""
	for attempt := 0; ; attempt++ {
		if fresh {
			id = NewRunID(time.Now())
		}
		err := os.Mkdir(filepath.Join(runsDir, id), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || !fresh || attempt == 10 {
			return nil, fmt.Errorf("creating run directory: %w", err)
		}
	}
	return open(filepath.Join(runsDir, id), nil, false, secrets)
}

// Reopen takes over the directory of an earlier run to continue it (a
// resume): it takes the lock, cuts a torn last line off the journal, and
// returns the facts of the earlier attempts. secrets are as for Create.
func Reopen(dir string, secrets ...string) (*Writer, []*record.Fact, error) {
	if st, err := os.Lstat(filepath.Join(dir, journalFile)); err != nil {
		return nil, nil, fmt.Errorf("resuming %s: %w", dir, err)
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("resuming %s: %s is not a regular file (%s): flow does not read or write a run's files through links", dir, filepath.Join(dir, journalFile), st.Mode().Type())
	}
	for _, sub := range []string{homesDir, worktreesDir} {
		if st, err := os.Lstat(filepath.Join(dir, sub)); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, fmt.Errorf("resuming %s: %s is a symbolic link: flow does not write a run's files through links", dir, filepath.Join(dir, sub))
		}
	}
	if err := refuseLinkedHomes(dir); err != nil {
		return nil, nil, err
	}
	if err := acquireLock(dir); err != nil {
		return nil, nil, err
	}
	facts, err := func() ([]*record.Fact, error) {
		if err := dropTornLine(filepath.Join(dir, journalFile)); err != nil {
			return nil, fmt.Errorf("cutting the torn journal line: %w", err)
		}
		return ReadJournal(dir)
	}()
	if err != nil {
		_ = releaseLock(dir)
		return nil, nil, err
	}
	w, err := open(dir, facts, true, secrets)
	if err != nil {
		return nil, nil, err
	}
	return w, facts, nil
}

// open opens the run's files, taking the lock unless the caller (Reopen)
// has it: locked, not facts, says so, since a reopened journal may hold
// no facts yet (a walk on Temporal whose first fact was not mirrored).
func open(dir string, facts []*record.Fact, locked bool, secrets []string) (*Writer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding the run directory: %w", err)
	}
	if !locked {
		if err := acquireLock(abs); err != nil {
			return nil, err
		}
	}
	w := &Writer{dir: abs, facts: facts, stop: make(chan struct{}),
		secrets: secret.New(secret.FromEnviron(os.Environ())...).With(secrets...)}
	if w.journal, err = openLineFile(filepath.Join(abs, journalFile), w.secrets); err == nil {
		w.events, err = openLineFile(filepath.Join(abs, eventsFile), w.secrets)
	}
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("opening run directory: %w", err)
	}
	w.refresher.Go(w.refresh)
	return w, nil
}

// Dir is the run directory's absolute path.
func (w *Writer) Dir() string { return w.dir }

// ID is the run's id.
func (w *Writer) ID() string { return filepath.Base(w.dir) }

// Secrets returns the run's Redactor, for everything else written into
// the run directory (the drivers' files in the homes).
func (w *Writer) Secrets() *secret.Redactor { return w.secrets }

// Home returns the home directory of a visit or memory scope at path. It
// is not created here: whoever writes there first creates it.
func (w *Writer) Home(path string) string { return Home(w.dir, path) }

// Home returns the home directory of a visit or memory scope at path in
// the run directory dir, for a program that holds no Writer (a Temporal
// worker keeps homes in a run directory of its own).
func Home(dir, path string) string {
	return filepath.Join(dir, homesDir, filepath.FromSlash(path))
}

// WriteSnapshot writes snapshot.json, before the first visit starts.
func (w *Writer) WriteSnapshot(s *Snapshot) error {
	return writeJSONAside(filepath.Join(w.dir, snapshotFile), w.secrets, s)
}

// Fact appends f to the journal: when Fact returns, the line is in the
// kernel's page cache, which outlives the engine. The end of a visit that
// spent tokens or money is also fsynced, so a paid turn survives a power
// cut. A fact that holds a secret is redacted in place before it is
// written. f must not change afterwards.
func (w *Writer) Fact(f *record.Fact) error {
	line, err := w.journal.append(f, f.Type == record.FactEnd && f.Usage.Spent())
	if line != nil {
		var clean record.Fact
		if json.Unmarshal(line, &clean) == nil {
			*f = clean
		}
	}
	// The facts kept for report.html and usage.json never need a visit
	// key, whose parts would stay live until the run ends (about 1 KiB a
	// visit, docs/performance.md).
	kept := f
	if f.Key != nil {
		c := *f
		c.Key = nil
		kept = &c
	}
	w.mu.Lock()
	w.facts = append(w.facts, kept)
	w.mu.Unlock()
	return err
}

// Event appends e to events.jsonl. An event that holds a secret is
// redacted in place before it is written, so whoever is handed e next (the
// live view) sees it redacted too. Events are for watching a run; a resume
// relies on the journal only.
func (w *Writer) Event(e *record.Event) error {
	line, err := w.events.append(e, false)
	if line != nil {
		var clean record.Event
		if json.Unmarshal(line, &clean) == nil {
			*e = clean
		}
	}
	return err
}

// Finish writes what a run leaves when it ends: output.json, usage.json
// and report.html.
func (w *Writer) Finish(output any) error {
	w.mu.Lock()
	facts := w.facts[:len(w.facts):len(w.facts)]
	w.mu.Unlock()
	outErr := writeJSONAside(filepath.Join(w.dir, outputFile), w.secrets, output)
	usageErr := writeJSONAside(filepath.Join(w.dir, usageFile), w.secrets, Tally(facts))
	reportErr := w.report(facts)
	return errors.Join(outErr, usageErr, reportErr)
}

// refresh rewrites report.html every reportEvery while the run goes on.
func (w *Writer) refresh() {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			facts := w.facts[:len(w.facts):len(w.facts)]
			w.mu.Unlock()
			_ = w.report(facts) // best effort: Finish reports errors
		}
	}
}

// reportEvery is how often report.html is refreshed while a run goes on.
const reportEvery = 2 * time.Second

func (w *Writer) report(facts []*record.Fact) error {
	w.reportMu.Lock()
	defer w.reportMu.Unlock()
	info, err := summarize(w.dir, facts)
	if err != nil {
		return err
	}
	if info.Status == record.StatusInterrupted { // the fact that ends it is not written yet
		info.Status = record.StatusRunning
	}
	return writeReport(w.dir, info, facts, w.secrets)
}

// Close ends the refresher, closes the files and removes the lock. It is
// idempotent.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		w.refresher.Wait()
		var errs []error
		for _, l := range []*lineFile{w.journal, w.events} {
			if l != nil {
				errs = append(errs, l.close())
			}
		}
		errs = append(errs, releaseLock(w.dir))
		w.closeErr = errors.Join(errs...)
		w.mu.Lock()
		facts := w.facts[:len(w.facts):len(w.facts)]
		w.mu.Unlock()
		indexRun(w.dir, facts, w.secrets)
	})
	return w.closeErr
}

// writeAside writes the file at path whole: write fills a file beside it,
// which is then renamed into place, so a reader never sees half of it.
// What write writes is redacted of secrets on its way to the file.
func writeAside(path string, secrets *secret.Redactor, write func(*bufio.Writer) error) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	// The file beside is made afresh: whatever a crafted run directory
	// holds under its name (a link to elsewhere) is removed, not written
	// through.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	f, err := openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	rw := secrets.Writer(f)
	bw := bufio.NewWriterSize(rw, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = rw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}
