package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/flowrun/flow/schema"
)

// RunInfo summarises a run directory for `flow runs`, `flow show` and
// `flow resume`, from its journal and lock alone.
type RunInfo struct {
	ID      string    `json:"id"`
	Dir     string    `json:"dir"`
	Flow    string    `json:"flow"`
	Status  string    `json:"status"` // running, succeeded, failed, stopped, interrupted
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	WallMS  int64     `json:"wall_ms"`
	Usage   Usage     `json:"usage"`
	Failure *Failure  `json:"error,omitempty"`
	// Resumable says whether flow resume may continue the run; Why says
	// why not when it may not.
	Resumable bool   `json:"resumable"`
	Why       string `json:"why,omitempty"`
	Facts     []Fact `json:"-"`
}

// Inspect reads a run directory.
func Inspect(dir string) (*RunInfo, error) {
	facts, err := ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	info, err := summarize(dir, pointers(facts))
	if err != nil {
		return nil, err
	}
	info.Facts = facts
	return info, nil
}

func pointers(facts []Fact) []*Fact {
	out := make([]*Fact, len(facts))
	for i := range facts {
		out[i] = &facts[i]
	}
	return out
}

// summarize builds a RunInfo (without Facts) from a run's facts.
func summarize(dir string, facts []*Fact) (*RunInfo, error) {
	info := &RunInfo{ID: filepath.Base(dir), Dir: dir, Status: "interrupted"}
	var last *Fact
	for _, f := range facts {
		switch f.Type {
		case "run":
			if f.Status == "running" {
				if info.Started.IsZero() {
					info.Started, info.Flow = f.Time, f.Flow
				}
				info.Status, info.Failure, info.Ended = "interrupted", nil, time.Time{}
			} else {
				info.Status, info.Failure, info.Ended = f.Status, f.Error, f.Time
			}
			last = f
		case "end":
			if f.Usage != nil {
				info.Usage.add(*f.Usage)
			}
		}
	}
	if last == nil {
		return nil, fmt.Errorf("reading %s: the journal has no run fact", dir)
	}
	end := info.Ended
	if end.IsZero() {
		end = time.Now()
	}
	info.WallMS = end.Sub(info.Started).Milliseconds()
	if l, err := readLock(dir); err == nil && info.Status == "interrupted" && alive(l.PID) {
		if host, _ := os.Hostname(); host == l.Host {
			info.Status = "running"
		}
	}
	info.Resumable, info.Why = resumable(info)
	return info, nil
}

func resumable(info *RunInfo) (bool, string) {
	switch info.Status {
	case "running":
		return false, "it is running (another process holds its lock)"
	case "succeeded":
		return false, "it succeeded; there is nothing left to run"
	case "interrupted", "stopped":
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

func readLock(dir string) (*Lock, error) {
	b, err := os.ReadFile(filepath.Join(dir, "lock.json"))
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("reading lock: %w", err)
	}
	return &l, nil
}

// ListRuns inspects every run under runsDir, newest first. Directories that
// are not runs are skipped.
func ListRuns(runsDir string) ([]*RunInfo, error) {
	entries, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var out []*RunInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		info, err := Inspect(filepath.Join(runsDir, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// Snapshot is snapshot.json as a resume reads it.
type Snapshot struct {
	Run      string                     `json:"run"`
	Flow     string                     `json:"flow"`
	File     string                     `json:"file"`
	Flows    map[string]SnapshotFlow    `json:"flows"`
	Agents   map[string]json.RawMessage `json:"agents"`
	Input    any                        `json:"input"`
	Settings struct {
		Model   string `json:"model"`
		Timeout string `json:"timeout"`
		WorkDir string `json:"workdir"`
	} `json:"settings"`
}

// SnapshotFlow is one flow file as the run read it.
type SnapshotFlow struct {
	File   string `json:"file"`
	Source string `json:"source"`
}

// ReadSnapshot reads a run's snapshot.json.
func ReadSnapshot(dir string) (*Snapshot, error) {
	b, err := os.ReadFile(filepath.Join(dir, "snapshot.json"))
	if err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	return &s, nil
}
