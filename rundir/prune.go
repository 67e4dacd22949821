package rundir

import (
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"os"
	"path/filepath"
	"time"
)

// RemoveRunsBefore removes the run directories under runsDir of the runs
// that started before t (`flow gc --older-than`, docs/reuse-and-tests.md):
// the recordings flow run --reuse and flow test can answer from. A run
// that is running, or that still keeps a worktree, is left alone; with
// dryRun nothing is removed. It returns the runs it removed (or would).
func RemoveRunsBefore(runsDir string, t time.Time, dryRun bool) ([]*RunInfo, error) {
	runs, err := List(runsDir)
	if err != nil {
		return nil, err
	}
	var gone []*RunInfo
	for _, r := range runs {
		if r.Status == record.StatusRunning || len(r.Worktrees) > 0 || r.Started.IsZero() || !r.Started.Before(t) || !isRunDir(r) {
			continue
		}
		if !dryRun {
			if err := os.RemoveAll(r.Dir); err != nil {
				return gone, fmt.Errorf("removing run %s: %w", r.ID, err)
			}
		}
		gone = append(gone, r)
	}
	return gone, nil
}

// ParseOlderThan reads --older-than: a date (2026-11-30), a time
// (RFC 3339), or an age (720h, 30m) before now.
func ParseOlderThan(s string, now time.Time) (time.Time, error) {
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--older-than %q: give a date (2026-11-30), a time (2026-11-30T12:00:00Z) or an age (720h)", s)
}

// isRunDir reports whether r's directory is recognisably one flow made, so
// that flow gc may remove it whole: a directory (not a link) whose journal
// is a regular file and that either holds a run fact (a cassette's
// journal holds none) or, when its journal cannot be read, flow's
// snapshot beside it. Anything else under the runs directory is the
// user's, and left alone.
func isRunDir(r *RunInfo) bool {
	st, err := os.Lstat(r.Dir)
	if err != nil || !st.IsDir() {
		return false
	}
	if st, err := os.Lstat(filepath.Join(r.Dir, journalFile)); err != nil || !st.Mode().IsRegular() {
		return false
	}
	if r.Status == record.StatusCorrupt {
		st, err := os.Lstat(filepath.Join(r.Dir, snapshotFile))
		return err == nil && st.Mode().IsRegular()
	}
	for _, f := range r.Facts {
		if f.Type == record.FactRun {
			return true
		}
	}
	return false
}
