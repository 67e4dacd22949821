package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"io"
	"os"
	"path/filepath"
)

// The files of a run directory (docs/run-directory.md).
const (
	journalFile  = "journal.jsonl"
	eventsFile   = "events.jsonl"
	snapshotFile = "snapshot.json"
	lockFile     = "lock.json"
	outputFile   = "output.json"
	valuesFile   = "values.json"
	usageFile    = "usage.json"
	reportFile   = "report.html"
	homesDir     = "home"
	worktreesDir = "worktrees"
)

// CorruptError is a journal line that is not a fact, other than a torn
// last line: the file and the line say where.
type CorruptError struct {
	File string
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s:%d: not a journal fact: %v", e.File, e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ReadJournal reads the journal of the run in dir. A torn last line (the
// engine died mid-write) is ignored; a bad line elsewhere is a
// *CorruptError naming the file and line.
func ReadJournal(dir string) ([]*record.Fact, error) {
	path := filepath.Join(dir, journalFile)
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("reading journal: %w", err)
	}
	defer f.Close()
	var facts []*record.Fact
	rd := bufio.NewReaderSize(f, 64<<10)
	for line := 1; ; line++ {
		b, err := rd.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return facts, fmt.Errorf("reading %s: %w", path, err)
		}
		torn := err == io.EOF // no newline: the last line, maybe cut short
		if len(bytes.TrimSpace(b)) > 0 {
			fact := new(record.Fact)
			if jerr := json.Unmarshal(b, fact); jerr != nil {
				if torn {
					return facts, nil
				}
				return facts, &CorruptError{File: path, Line: line, Err: jerr}
			}
			facts = append(facts, fact)
		}
		if torn {
			return facts, nil
		}
	}
}

// HasJournal reports whether dir holds a journal: a run directory, or a
// cassette kept from one.
func HasJournal(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, journalFile))
	return err == nil
}
