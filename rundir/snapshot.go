package rundir

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Snapshot is snapshot.json: the flow and every flow it can call as read,
// the agents as resolved, the input and the resolved settings. A resume
// runs the snapshot, not the files as they are now (docs/run-directory.md).
type Snapshot struct {
	Run   string                  `json:"run"`
	Flow  string                  `json:"flow"`
	File  string                  `json:"file"`
	Flows map[string]SnapshotFlow `json:"flows"`
	// Agents are the agents as resolved, by name, each as the flows
	// package encodes its Agent: the run directory stores them, and the
	// caller that rebuilds the plan reads them (engine.LoadSnapshot).
	Agents   map[string]json.RawMessage `json:"agents"`
	Input    any                        `json:"input"`
	Settings Settings                   `json:"settings"`
	// Repos maps the top-level directory of each repository the run
	// isolates scopes in, when it is known before the run starts, to the
	// commit checked out there when it started: every worktree of the
	// run is made from it (docs/worktrees.md), whatever the user commits meanwhile.
	Repos map[string]string `json:"repos,omitempty"`
	// Temporal names the workflow that walks the run when it runs on
	// Temporal (flow run --temporal); the run directory is then its
	// mirror, and flow resume re-attaches to the workflow.
	Temporal *TemporalRun `json:"temporal,omitempty"`
}

// TemporalRun is where a run that Temporal walks lives there.
type TemporalRun struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	TaskQueue string `json:"task_queue"`
	Workflow  string `json:"workflow"`  // the workflow id: the run id
	Execution string `json:"execution"` // the workflow run id of the current attempt
	// Base is how many facts the journal held before the current attempt's
	// workflow started (a resume in a new execution); the mirror appends
	// the workflow's facts after them.
	Base int `json:"base,omitempty"`
}

// SnapshotFlow is one flow file as the run read it.
type SnapshotFlow struct {
	File   string `json:"file"`
	Source string `json:"source"`
}

// Settings are the run-wide settings as resolved when the run started:
// the command line's overrides and the configuration (without secrets).
type Settings struct {
	Model string `json:"model"`
	// Models are a sweep cell's models by agent (flows.Settings.Models).
	Models      map[string]string `json:"models,omitempty"`
	Timeout     string            `json:"timeout"`         // --timeout, "" if not given
	TurnTimeout string            `json:"default_timeout"` // the configuration's bound on a turn
	Concurrency int               `json:"concurrency"`
	WorkDir     string            `json:"workdir"`
	// Config is the resolved configuration, secrets left out.
	Config map[string]any `json:"config,omitempty"`
}

// Sources are the flow files' contents as the run read them, by path
// (for flows.Reload).
func (s *Snapshot) Sources() map[string][]byte {
	out := make(map[string][]byte, len(s.Flows))
	//workflowcheck:ignore a map built from a map, each flow under its own file: the same in any order
	for _, f := range s.Flows {
		out[f.File] = []byte(f.Source)
	}
	return out
}

// ReadSnapshot reads the snapshot of the run in dir.
func ReadSnapshot(dir string) (*Snapshot, error) {
	b, err := ReadRegular(filepath.Join(dir, snapshotFile))
	if err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, snapshotFile), err)
	}
	return &s, nil
}

// Changed lists the flow files whose content on disk is no longer what the
// run read, sorted.
func (s *Snapshot) Changed() []string {
	var out []string
	for _, f := range s.Flows {
		if same, ok := sameContent(f.File, f.Source); ok && !same {
			out = append(out, f.File)
		}
	}
	slices.Sort(out)
	return out
}

// Durations reads the snapshot's --timeout and configured turn timeout;
// an absent or unreadable one is 0.
func (s Settings) Durations() (timeout, turnTimeout time.Duration) {
	timeout, _ = time.ParseDuration(s.Timeout)
	turnTimeout, _ = time.ParseDuration(s.TurnTimeout)
	return timeout, turnTimeout
}
