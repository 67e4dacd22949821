package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// RunInfo summarises a run directory for `flow runs`, `flow show` and
// `flow resume`, from its journal and lock alone.
type RunInfo struct {
	ID      string          `json:"id"`
	Dir     string          `json:"dir"`
	Flow    string          `json:"flow"`
	Status  record.Status   `json:"status"`
	Started time.Time       `json:"started"`
	Ended   time.Time       `json:"ended,omitzero"`
	WallMS  int64           `json:"wall_ms"`
	Usage   record.Usage    `json:"usage"`
	Failure *record.Failure `json:"error,omitempty"`
	// Resumable says whether flow resume may continue the run; Why says
	// why not when it may not.
	Resumable bool   `json:"resumable"`
	Why       string `json:"why,omitempty"`
	// Worktrees are the worktrees of isolated scopes the run made, did not
	// remove, and are still there: kept on failure, for the user to look
	// at, flow resume to go on in, or flow gc to remove.
	Worktrees []*record.Worktree `json:"worktrees,omitempty"`
	// Overspend names each budget the run ended above (its end fact's).
	Overspend []record.Overspend `json:"overspend,omitempty"`
	// InfraInTree says a delegated child failed on the infrastructure
	// (its end fact's; docs/delegation.md).
	InfraInTree bool `json:"infra_in_tree,omitempty"`
	// ForkedFrom is where a fork came from (flow fork), nil for a run
	// that is not one.
	ForkedFrom *record.Fork `json:"forked_from,omitempty"`
	// Waiting are the waits a run that ended waiting waits on
	// (docs/waits.md).
	Waiting []WaitingOn    `json:"waiting,omitempty"`
	Facts   []*record.Fact `json:"-"`
}

// Inspect reads the run in dir.
func Inspect(dir string) (*RunInfo, error) {
	facts, err := ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	info, err := summarize(dir, facts)
	if err != nil {
		return nil, err
	}
	info.Facts = facts
	for _, w := range record.Kept(facts) {
		if _, err := os.Stat(w.Path); err == nil { // flow gc may have removed it
			info.Worktrees = append(info.Worktrees, w)
		}
	}
	return info, nil
}

// summarize builds a RunInfo (without Facts) from a run's facts.
func summarize(dir string, facts []*record.Fact) (*RunInfo, error) {
	info := &RunInfo{ID: filepath.Base(dir), Dir: dir, Status: record.StatusInterrupted}
	seen := false
	for _, f := range facts {
		switch f.Type {
		case record.FactRun:
			seen = true
			if f.Status == record.StatusRunning {
				if info.Started.IsZero() {
					info.Started, info.Flow, info.ForkedFrom = f.Time, f.Flow, f.ForkedFrom
				}
				info.Status, info.Failure, info.Ended, info.Overspend, info.InfraInTree = record.StatusInterrupted, nil, time.Time{}, nil, false
			} else {
				info.Status, info.Failure, info.Ended, info.Overspend, info.InfraInTree = f.Status, f.Error, f.Time, f.Overspend, f.InfraInTree
			}
		case record.FactEnd:
			if f.Usage != nil {
				info.Usage.Add(*f.Usage)
			}
		}
	}
	if !seen && !waitingOnTemporal(dir, info) {
		return nil, fmt.Errorf("reading %s: the journal has no run fact", filepath.Join(dir, journalFile))
	}
	end := info.Ended
	if end.IsZero() {
		end = time.Now()
	}
	info.WallMS = end.Sub(info.Started).Milliseconds()
	if info.Status == record.StatusInterrupted && heldByLiveProcess(dir) {
		info.Status = record.StatusRunning
	}
	if info.Status == StatusWaiting || waitsOnTemporal(dir, info.Status, facts) {
		info.Waiting = waitingOn(facts)
	}
	info.Resumable, info.Why = resumable(info)
	return info, nil
}

func resumable(info *RunInfo) (bool, string) {
	switch info.Status {
	case record.StatusRunning:
		return false, "it is running (another process holds its lock)"
	case record.StatusSucceeded:
		return false, "it succeeded; there is nothing left to run"
	case record.StatusInterrupted, record.StatusStopped, StatusWaiting:
		return true, ""
	}
	if info.Failure == nil {
		return true, ""
	}
	root := info.Failure.Root()
	if !root.Kind.Resumable() || root.Kind == schema.FailRefused {
		return false, fmt.Sprintf("it failed with %s at %s, which the flow decided itself; running it again would decide the same", root.Kind, root.Visit)
	}
	return true, ""
}

// List inspects every run under runsDir, newest first. Directories that
// are not runs are skipped; a run whose journal is corrupt is listed with
// StatusCorrupt and the error, naming the file and line, in Why.
func List(runsDir string) ([]*RunInfo, error) {
	return eachRun(runsDir, Inspect)
}

// eachRun is what read returns for every run directory under runsDir, a
// corrupt run as such, newest first; runs read fails otherwise are left
// out. A missing runsDir has no runs.
func eachRun(runsDir string, read func(dir string) (*RunInfo, error)) ([]*RunInfo, error) {
	names, err := runDirs(runsDir)
	if err != nil {
		return nil, err
	}
	out := readRuns(runsDir, names, read)
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// runDirs are the names of the directories under runsDir; a missing
// runsDir has none.
func runDirs(runsDir string) ([]string, error) {
	entries, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Find resolves a run named on the command line: a run directory, or an id
// under runsDir. It reports false if there is no such run.
func Find(runsDir, name string) (string, bool) {
	for _, dir := range []string{name, filepath.Join(runsDir, name)} {
		if _, err := os.Stat(filepath.Join(dir, journalFile)); err == nil {
			return dir, true
		}
	}
	return "", false
}

// corrupt describes a run whose journal cannot be read: what the snapshot
// and the run's id still say.
func corrupt(dir string, err *CorruptError) *RunInfo {
	info := &RunInfo{ID: filepath.Base(dir), Dir: dir, Status: record.StatusCorrupt, Why: err.Error()}
	if snap, serr := ReadSnapshot(dir); serr == nil {
		info.Flow = snap.Flow
	}
	// A run id begins with its start time (NewRunID).
	if t, terr := time.Parse("20060102-150405", info.ID[:min(len(info.ID), 15)]); terr == nil {
		info.Started = t
	} else if st, serr := os.Stat(dir); serr == nil {
		info.Started = st.ModTime()
	}
	return info
}

// waitingOnTemporal fills info for a run handed to Temporal whose
// workflow has not recorded its first fact yet (no worker took it, or
// none could open it: docs/temporal.md), and says whether it is one: its
// mirror's notes say why it waits, so flow show and flow runs list it.
func waitingOnTemporal(dir string, info *RunInfo) bool {
	snap, err := ReadSnapshot(dir)
	if err != nil || snap.Temporal == nil {
		return false
	}
	info.Flow = snap.Flow
	// A run id begins with its start time (NewRunID).
	if t, err := time.Parse("20060102-150405", info.ID[:min(len(info.ID), 15)]); err == nil {
		info.Started = t
	} else if st, err := os.Stat(dir); err == nil {
		info.Started = st.ModTime()
	}
	return true
}
