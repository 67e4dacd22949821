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
	"time"
)

// The files of a sweep directory (docs/sweeps.md). The sweep package owns
// this layout; each cell's run directory under cellsDir is an ordinary run
// directory, which package rundir owns.
const (
	sweepFile  = "sweep.json"
	cellsDir   = "cells"
	reportName = "report" // report.md, report.csv, report.json, report.html
)

// Status is a cell's status word.
type Status string

// The cell statuses. A cell has ended when it succeeded or failed; the
// others are run (or resumed) by `flow sweep --resume`.
const (
	StatusPending   Status = "pending"   // not started yet
	StatusRunning   Status = "running"   // started; if the sweep is not running, it was cut off
	StatusSucceeded Status = "succeeded" // its run ended, and counted as a success
	StatusFailed    Status = "failed"    // its run ended, and counted as a failure
	StatusStopped   Status = "stopped"   // interrupted (Ctrl-C); resumable
	StatusSkipped   Status = "skipped"   // not started: what was left of the budget could not cover its forecast
)

// Ended reports whether a cell with this status has its outcome.
func (s Status) Ended() bool { return s == StatusSucceeded || s == StatusFailed }

// Cell is one run of the grid.
type Cell struct {
	Index      int    `json:"index"`            // 1-based, in run order
	Assignment string `json:"assignment"`       // the assignment's label
	Params     string `json:"params,omitempty"` // the parameter set's label
	Task       string `json:"task"`
	Repeat     int    `json:"repeat"` // 1-based
	Input      any    `json:"input"`
	Run        string `json:"run,omitempty"` // the run id under cells/, drawn before it starts
	Status     Status `json:"status"`
	Note       string `json:"note,omitempty"` // why a cell was skipped, or the quota it ran out of
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
	b, err := os.ReadFile(filepath.Join(dir, sweepFile))
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
	return &f, nil
}

func writeFile(dir string, f *File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("writing sweep: %w", err)
	}
	return writeAside(filepath.Join(dir, sweepFile), append(b, '\n'))
}

// writeAside writes path whole: into a file beside it, then renamed.
func writeAside(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
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
