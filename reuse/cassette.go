package reuse

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// The files of a cassette directory (docs/reuse-and-tests.md).
const (
	cassetteJournal = "journal.jsonl" // the recorded leaf visits' ends, as a run journals them
	cassetteInput   = "input.json"    // the input the recording ran with
	cassetteAnswers = "answers"       // oversized answers, by visit
	cassetteChanges = "changes"       // what isolated visits changed in their worktrees, by visit
)

// fileName is how a visit names its file in a cassette directory.
func fileName(visit string) string {
	return strings.NewReplacer("/", "_", "#", "-", "[", "-", "]", "").Replace(visit)
}

// WriteCassette keeps the recording of the run in runDir as the cassette
// directory dir, which a repository can commit: the ends of the leaf
// visits that succeeded, with their keys, values and usage; no times,
// sessions, transcripts or paths of this machine (an answer file is
// copied in and named relative to the cassette; what an isolated visit
// changed in its worktree is kept as a patch, changes/VISIT.patch). What the run wrote was
// already redacted by its writer. dir is replaced only when it is a
// cassette (CheckCassetteDir): its files are removed one by one, never
// the directory's tree.
func WriteCassette(runDir, dir string) error {
	facts, err := rundir.ReadJournal(runDir)
	if err != nil {
		return err
	}
	if err := CheckCassetteDir(dir); err != nil {
		return err
	}
	rec := &Recording{Name: filepath.Base(runDir), Dir: runDir, repos: map[string]string{}, own: true}
	for _, w := range record.Worktrees(facts) {
		rec.repos[w.Scope] = w.Repo
	}
	var files []cassetteFile // what the cassette will hold, checked before any is written
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, f := range facts {
		switch {
		case f.Type == record.FactRun && f.Input != nil && f.Status == record.StatusRunning && !f.Resumed:
			in, err := json.MarshalIndent(f.Input, "", "  ")
			if err != nil {
				return err
			}
			files = append(files, cassetteFile{cassetteInput, append(in, '\n')})
			continue
		case f.Type == record.FactStart && f.Parent != "":
			// A delegated child's start: its parent and its task, which a
			// replay of the parent repeats its delegate calls from.
			kept := record.Fact{Type: f.Type, Visit: f.Visit, Node: f.Node, Kind: f.Kind, Parent: f.Parent, Input: f.Input}
			if err := enc.Encode(&kept); err != nil {
				return err
			}
			continue
		case f.Type != record.FactEnd || !f.Succeeded() || f.Key == nil:
			continue
		}
		kept := record.Fact{Type: f.Type, Visit: f.Visit, Node: f.Node, Kind: f.Kind, Agent: f.Agent, OK: f.OK,
			Output: f.Output, Size: f.Size, Usage: f.Usage, Model: f.Model, Key: f.Key}
		if f.File != "" {
			name := filepath.Join(cassetteAnswers, fileName(f.Visit)+".md")
			answer, err := rundir.ReadRegular(rec.locate(f.File)) // not through a link, never a FIFO
			if err != nil {
				return fmt.Errorf("copying the answer of %s: %w", f.Visit, err)
			}
			files = append(files, cassetteFile{name, answer})
			kept.File = filepath.ToSlash(name)
		}
		if w := f.Worktree; w != nil && len(w.Files) > 0 {
			// What an isolated visit changed goes with it, as a patch: a
			// replay makes the change again in its own worktree, and lands it.
			patch, err := hit{rec, f}.change(context.Background(), "")
			if err != nil {
				return fmt.Errorf("keeping what %s changed: %w", f.Visit, err)
			}
			files = append(files, cassetteFile{filepath.Join(cassetteChanges, fileName(f.Visit)+".patch"), []byte(patch)})
			kept.Worktree = &record.Worktree{Scope: w.Scope, Files: w.Files}
		}
		if err := enc.Encode(&kept); err != nil {
			return err
		}
	}
	files = append(files, cassetteFile{cassetteJournal, []byte(b.String())})
	if err := scanCassette(dir, files); err != nil {
		return err
	}
	if err := clearCassette(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, cf := range files {
		p := filepath.Join(dir, cf.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeFile(p, string(cf.data)); err != nil {
			return err
		}
	}
	return nil
}

// CassetteInput is the input a cassette (or a run) was recorded with, nil
// if it has none.
func CassetteInput(dir string) (any, error) {
	b, err := rundir.ReadRegular(filepath.Join(dir, cassetteInput))
	if os.IsNotExist(err) { // a run: its first run fact's
		facts, err := rundir.ReadJournal(dir)
		if err != nil {
			return nil, err
		}
		for _, f := range facts {
			if f.Type == record.FactRun && f.Input != nil {
				return f.Input, nil
			}
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, cassetteInput), err)
	}
	return v, nil
}

func writeFile(path, s string) error {
	tmp := path + ".tmp" + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	_, _ = w.WriteString(s) // a bufio.Writer keeps its first error: Flush returns it
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
