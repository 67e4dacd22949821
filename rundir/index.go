package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
)

// The index of a runs directory is one small file per run, summary.json in
// the run's directory (docs/run-directory.md): the run's RunInfo and the
// size and modification time of its journal when it was summed up. It
// spares flow runs, flow run --reuse and flow plan --reuse from reading
// every journal: a run's summary is trusted while its journal still has
// that size and time, and the run is read again (and its summary written
// anew) otherwise. So the index is a cache: a missing, stale or torn
// summary only costs the read it was to save, never a wrong answer.
//
// The Writer writes it, whole and renamed into place, when it closes the
// run (at its end, or when it is interrupted); a reader that had to read
// a run that is not running writes it too. One file per run needs no lock
// between concurrent runs: only a run's holder, or a reader of a run that
// nobody holds, writes its summary. It is not written when a run starts:
// the journal changes at once, so the summary would be stale.
const summaryFile = "summary.json"

// indexEntry is a run's line in the index: its RunInfo, in RunInfo's own
// encoding (so a field added to RunInfo is in the index with no more
// code), less what is read live — its directory, its wall time while it
// goes on, whether it is running or resumable, its kept worktrees still
// there — and the journal's size and modification time it was read at.
type indexEntry struct {
	RunInfo
	Kept  []*record.Worktree `json:"kept,omitempty"`
	Size  int64              `json:"size"`
	MTime int64              `json:"mtime"`
}

// journalVersion is what says a journal changed: its size and its
// modification time to the nanosecond.
type journalVersion struct{ size, mtime int64 }

func journalStat(dir string) (journalVersion, bool) {
	st, err := os.Lstat(filepath.Join(dir, journalFile))
	if err != nil || !st.Mode().IsRegular() {
		return journalVersion{}, false
	}
	return journalVersion{st.Size(), st.ModTime().UnixNano()}, true
}

// Summaries is List without the facts: every run under runsDir, newest
// first, read from the index where it is current and from the journal
// where it is not (then written to the index). Its RunInfos have no Facts.
func Summaries(runsDir string) ([]*RunInfo, error) {
	return eachRun(runsDir, summary)
}

// summary is the run in dir from its line in the index if the line is
// current, else from its journal (and the line written anew).
func summary(dir string) (*RunInfo, error) {
	v, ok := journalStat(dir)
	if ie := readSummary(dir); ok && ie != nil && ie.ID == filepath.Base(dir) && ie.Size == v.size && ie.MTime == v.mtime {
		return ie.info(dir), nil
	}
	info, err := inspectRun(dir)
	if ce := (*CorruptError)(nil); errors.As(err, &ce) {
		info, err = corrupt(dir, ce), nil // a corrupt run has its line too
	}
	if err != nil {
		return nil, err
	}
	info.Facts = nil
	// A run that goes on changes its journal: its line would be stale at
	// once. The journal is read after it was stat'ed, so a line records a
	// version no older than what was read.
	if ok && info.Status != record.StatusRunning {
		_ = writeSummary(dir, newEntry(info, v), nil)
	}
	return info, nil
}

func newEntry(info *RunInfo, v journalVersion) *indexEntry {
	e := &indexEntry{RunInfo: *info, Kept: info.Worktrees, Size: v.size, MTime: v.mtime}
	e.Dir, e.WallMS, e.Resumable, e.Worktrees, e.Facts = "", 0, false, nil, nil
	if info.Status != record.StatusCorrupt {
		e.Why = ""
	}
	return e
}

// info is the RunInfo the line stands for, with what is read live: a run
// not ended is running while a live process holds its lock (summarize),
// and a kept worktree is listed while it is still there (Inspect).
func (e *indexEntry) info(dir string) *RunInfo {
	info := e.RunInfo
	info.Dir = dir
	end := info.Ended
	if end.IsZero() {
		end = time.Now()
	}
	if info.Status != record.StatusCorrupt {
		info.WallMS = end.Sub(info.Started).Milliseconds()
		if info.Status == record.StatusInterrupted && heldByLiveProcess(dir) {
			info.Status = record.StatusRunning
		}
		info.Resumable, info.Why = resumable(&info)
	}
	for _, w := range e.Kept {
		if _, err := os.Stat(w.Path); err == nil {
			info.Worktrees = append(info.Worktrees, w)
		}
	}
	return &info
}

// readSummary reads the summary of the run in dir, or nil.
func readSummary(dir string) *indexEntry {
	f, err := openFile(filepath.Join(dir, summaryFile), os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var e indexEntry
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&e) != nil {
		return nil
	}
	return &e
}

// indexRun writes the summary of the run in dir, whose facts are facts,
// as its Writer closes it: the next Summaries reads it instead of the
// journal. It is best effort, as the index is a cache.
func indexRun(dir string, facts []*record.Fact, secrets *secret.Redactor) {
	v, ok := journalStat(dir)
	if !ok {
		return
	}
	info, err := summarize(dir, facts)
	if err != nil || info.Status == record.StatusRunning {
		return
	}
	info.Worktrees = record.Kept(facts)
	_ = writeSummary(dir, newEntry(info, v), secrets)
}

// writeSummary writes e as the summary of the run in dir, whole.
func writeSummary(dir string, e *indexEntry, secrets *secret.Redactor) error {
	return writeAside(filepath.Join(dir, summaryFile), secrets, func(w *bufio.Writer) error {
		return json.NewEncoder(w).Encode(e)
	})
}
