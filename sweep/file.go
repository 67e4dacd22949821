package sweep

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/flowrun/flow/rundir"
)

// The files of a sweep directory (docs/sweeps.md). The sweep package owns
// this layout; each cell's run directory under cellsDir is an ordinary run
// directory, which package rundir owns.
const (
	sweepFile  = "sweep.json"
	lockFile   = "lock.json" // who runs the sweep's cells (Sweep.Lock)
	cellsDir   = "cells"
	reportName = "report" // report.md, report.csv, report.json, report.html
)

// CellStatus is a cell's status word.
type CellStatus string

// The cell statuses. A cell has ended when it succeeded or failed; the
// others are run (or resumed) by `flow sweep --resume`.
const (
	StatusPending   CellStatus = "pending"   // not started yet
	StatusRunning   CellStatus = "running"   // started; if the sweep is not running, it was cut off
	StatusSucceeded CellStatus = "succeeded" // its run ended, and counted as a success
	StatusFailed    CellStatus = "failed"    // its run ended, and counted as a failure
	StatusStopped   CellStatus = "stopped"   // interrupted (Ctrl-C); resumable
	StatusSkipped   CellStatus = "skipped"   // not started: what was left of the budget could not cover its forecast
)

// Ended reports whether a cell with this status has its outcome.
func (s CellStatus) Ended() bool { return s == StatusSucceeded || s == StatusFailed }

// Cell is one run of the grid.
type Cell struct {
	Index      int        `json:"index"`            // 1-based, in run order
	Assignment string     `json:"assignment"`       // the assignment's label
	Params     string     `json:"params,omitempty"` // the parameter set's label
	Task       string     `json:"task"`
	Repeat     int        `json:"repeat"` // 1-based
	Input      any        `json:"input"`
	Run        string     `json:"run,omitempty"` // the run id under cells/, drawn before it starts
	Status     CellStatus `json:"status"`
	Note       string     `json:"note,omitempty"` // why a cell was skipped, or the quota it ran out of
	// Unpriced says the cell started under a budget with no forecast to
	// reserve: what it spends may carry the sweep over its budget.
	Unpriced bool `json:"unpriced,omitempty"`
	// Reserved is what its forecast reserved of the budget when it
	// started (children of delegating nodes included): an overspend
	// names the cells that spent more.
	Reserved *Budget `json:"reserved,omitempty"`
	// Reruns counts the times it ran again after an infrastructure failure
	// (rate_limit, unavailable, a killed worker; docs/sweeps.md).
	Reruns  int      `json:"reruns,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Budget bounds a whole sweep; a zero field is unbounded.
type Budget struct {
	Tokens int64   `json:"tokens,omitempty"`
	Cost   float64 `json:"cost,omitempty"`
}

// File is sweep.json: everything a resume and the reports need — the
// grid, the flow as read, the settings, and each cell with its run id,
// status and outcome. It is rewritten whole (beside, then renamed) after
// every change, so a reader never sees half of it.
type File struct {
	Version     int          `json:"version"`
	ID          string       `json:"id"`
	Flow        string       `json:"flow"`
	FlowFile    string       `json:"file"`   // the flow file, absolute
	Source      string       `json:"source"` // its text as the sweep read it
	WorkDir     string       `json:"workdir"`
	Created     time.Time    `json:"created"`
	Spec        Spec         `json:"spec"`
	Score       string       `json:"score,omitempty"` // sweep.score's source; "" means the run's success
	Timeout     string       `json:"timeout,omitempty"`
	Budget      Budget       `json:"budget"`
	Concurrency int          `json:"concurrency"`
	Temporal    *Temporal    `json:"temporal,omitempty"` // the server the cells run on, if on Temporal
	Assignments []Assignment `json:"assignments"`
	ParamSets   []ParamSet   `json:"param_sets"`
	Cells       []*Cell      `json:"cells"`
	// Providers are the rate limiters' figures per provider key.
	Providers []ProviderRow `json:"providers,omitempty"`
}

// fileVersion is the version of sweep.json this package writes.
const fileVersion = 1

// NewID returns a sortable, unique sweep id: time, then randomness.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func readFile(dir string) (*File, error) {
	b, err := rundir.ReadRegular(filepath.Join(dir, sweepFile))
	if err != nil {
		return nil, fmt.Errorf("reading sweep: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, sweepFile), err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("reading %s: version %d, this flow reads version %d", filepath.Join(dir, sweepFile), f.Version, fileVersion)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("reading %s: %w (flow sweep did not write it so: was it edited?)", filepath.Join(dir, sweepFile), err)
	}
	return &f, nil
}

// check holds a sweep file read from disk to what Create writes: every
// cell is there, of an assignment and a parameter set the file lists, with
// a status flow knows. A file that does not is an error, not a panic
// further on.
func (f *File) check() error {
	if len(f.Assignments) == 0 {
		return errors.New(`"assignments" lists no assignment`)
	}
	if len(f.ParamSets) == 0 {
		return errors.New(`"param_sets" lists no parameter set`)
	}
	if len(f.Cells) == 0 {
		return errors.New(`"cells" lists no cell`)
	}
	as := map[string]bool{}
	for _, a := range f.Assignments {
		as[a.Label] = true
	}
	ps := map[string]bool{}
	for _, p := range f.ParamSets {
		ps[p.Label] = true
	}
	for i, c := range f.Cells {
		switch {
		case c == nil:
			return fmt.Errorf("cell %d is null", i+1)
		case !as[c.Assignment]:
			return fmt.Errorf("cell %d is of assignment %q, which the file does not list", i+1, c.Assignment)
		case !ps[c.Params]:
			return fmt.Errorf("cell %d is of parameter set %q, which the file does not list", i+1, c.Params)
		case c.Repeat < 1:
			return fmt.Errorf("cell %d has repeat %d; repeats count from 1", i+1, c.Repeat)
		}
		switch c.Status {
		case StatusPending, StatusRunning, StatusSucceeded, StatusFailed, StatusStopped, StatusSkipped, StatusQuota:
		default:
			return fmt.Errorf("cell %d has status %q", i+1, c.Status)
		}
		if c.Run != "" && (c.Run != filepath.Base(c.Run) || c.Run == "." || c.Run == "..") {
			return fmt.Errorf("cell %d names run %q, which is not a run id", i+1, c.Run)
		}
	}
	return nil
}

func writeFile(dir string, f *File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("writing sweep: %w", err)
	}
	return writeAside(filepath.Join(dir, sweepFile), append(b, '\n'))
}

// writeAside writes path whole: into a file beside it, then renamed. The
// file beside is made afresh, never written through a link left there.
func writeAside(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Find resolves a sweep named on the command line: a sweep directory, or
// an id under sweepsDir.
func Find(sweepsDir, name string) (string, bool) {
	for _, dir := range []string{name, filepath.Join(sweepsDir, name)} {
		if _, err := os.Stat(filepath.Join(dir, sweepFile)); err == nil {
			return dir, true
		}
	}
	return "", false
}

// CellsDirs lists the directories holding the cells of every sweep under
// sweepsDir, newest sweep first: earlier runs a forecast learns from.
func CellsDirs(sweepsDir string) ([]string, error) {
	entries, err := os.ReadDir(sweepsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing sweeps: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(sweepsDir, e.Name(), sweepFile)); err == nil {
				out = append(out, filepath.Join(sweepsDir, e.Name(), cellsDir))
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out, nil
}
