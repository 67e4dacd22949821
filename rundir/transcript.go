package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNoVisit is Transcript's error for a visit the run's journal does not
// name.
var ErrNoVisit = errors.New("no such visit")

// Transcript finds the transcript of visit in the run in dir: the newest
// *.jsonl or *.log in the visit's home, or in its memory scope's home.
// With visit "", it finds the latest visit that has one. Live logs count:
// they are written while the visit runs. Only visits the journal names are
// looked up, so a visit path cannot lead outside the run directory.
func Transcript(dir, visit string) (string, error) {
	facts, err := ReadJournal(dir)
	if err != nil {
		return "", err
	}
	var homes []string
	var remote *record. // the end of a visit a remote worker ran
				Fact
	named := false
	for _, v := range Visits(facts) {
		if visit == "" {
			homes = append([]string{v.Start.Visit}, homes...) // latest first
			continue
		}
		if v.Start.Visit != visit {
			continue
		}
		named = true
		homes = append(homes, visit)
		if v.End != nil && v.End.Scope != nil {
			homes = append(homes, v.End.Scope.Path)
		}
		if v.End != nil && v.End.Worker != "" {
			remote = v.End
		}
	}
	if visit != "" && !named {
		return "", fmt.Errorf("%w: run %s has no visit %s", ErrNoVisit, filepath.Base(dir), visit)
	}
	home := func(path string) string { return filepath.Join(dir, homesDir, filepath.FromSlash(path)) }
	for _, h := range homes {
		if p := newestTranscript(home(h)); p != "" {
			return p, nil
		}
	}
	if remote == nil && visit != "" {
		// A visit running on a remote worker: its mirror recorded where.
		if r, err := readRemoteHome(dir, visit); err == nil {
			if p := newestTranscript(r.Home); p != "" {
				return p, nil
			}
			return "", fmt.Errorf("visit %s runs on worker %s, which keeps its transcript in %s on its machine", visit, r.Worker, r.Home)
		}
	}
	if remote != nil && remote.Transcript != "" {
		// A worker keeps the transcript in its own run directory: readable
		// here when the worker shares this machine.
		if _, err := os.Stat(remote.Transcript); err == nil {
			return remote.Transcript, nil
		}
		return "", fmt.Errorf("visit %s ran on worker %s, which keeps its transcript at %s on its machine", visit, remote.Worker, remote.Transcript)
	}
	if visit == "" {
		return "", fmt.Errorf("no visit of run %s has a transcript yet", filepath.Base(dir))
	}
	return "", fmt.Errorf("visit %s has no readable transcript in %s (it may have been deleted)", visit, home(visit))
}

func newestTranscript(home string) string {
	entries, err := os.ReadDir(home)
	if err != nil {
		return ""
	}
	best, bestT := "", time.Time{}
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".jsonl") || strings.HasSuffix(e.Name(), ".log")) {
			continue
		}
		if st, err := e.Info(); err == nil && st.ModTime().After(bestT) {
			best, bestT = filepath.Join(home, e.Name()), st.ModTime()
		}
	}
	return best
}

// RemoteHome is where a visit runs on a remote worker (flow worker,
// docs/temporal.md): the worker's own queue and the visit's home on its
// machine. The mirror of a Temporal run writes it while the visit runs.
type RemoteHome struct {
	Worker string `json:"worker"`
	Home   string `json:"home"`
}

const remoteHomeFile = "worker.json"

// WriteRemoteHome records where visit of the run in dir runs.
func WriteRemoteHome(dir, visit string, r RemoteHome) error {
	home := Home(dir, visit)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, remoteHomeFile), b, 0o644)
}

func readRemoteHome(dir, visit string) (*RemoteHome, error) {
	b, err := os.ReadFile(filepath.Join(Home(dir, visit), remoteHomeFile))
	if err != nil {
		return nil, err
	}
	var r RemoteHome
	if err := json.Unmarshal(b, &r); err != nil || r.Home == "" {
		return nil, fmt.Errorf("%s: not where a visit runs", remoteHomeFile)
	}
	return &r, nil
}
