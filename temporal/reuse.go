package temporal

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/reuse"
)

// Reuse on Temporal (docs/reuse-and-tests.md, "On Temporal"): the client
// opens the recordings of this machine as a local run does (package
// reuse) and hands the run workflow, in its input, the recorded visits it
// may take, by key (RunInput.Reused). The walk answers a visit whose key
// is there from it, on the workflow, and schedules no activity for it:
// the workers, which cannot read this machine's runs, never see it. The
// recorded answers are the workflow's input, never read from a disk, so
// the walk stays deterministic; like every payload they are sealed with
// temporal.key when it is set, and without one they are refused when they
// hold a secret this process knows, and masked where they have the shape
// of one, as every payload is (plain.go).

// ReuseFrom names the runs a run on Temporal reuses from (flow run
// --reuse --temporal): dirs, read as reuse.Open reads them.
type ReuseFrom struct {
	RunsDir string
	Dirs    []string
}

// maxReused bounds the compressed recorded visits a run's input carries,
// beside its snapshot and, once it continued as new, the facts it
// carries (maxCarried), all under Temporal's 2 MB payload limit.
const maxReused = 512 << 10

// ReusedVisit is one recorded visit a run on Temporal may take instead of
// running it: what the walk needs to answer it, never a file's content.
type ReusedVisit struct {
	Run   string `json:"run"`
	Visit string `json:"visit"`
	// Output is the recorded value: a turn's answer (a string, or a typed
	// value), a command's {passed, exit, report}.
	Output any `json:"output,omitempty"`
	// File and Size name the whole answer when Output is its start, on
	// the client's machine, where the run's mirror is; Transcript is the
	// recorded visit's transcript there.
	File       string        `json:"file,omitempty"`
	Size       int64         `json:"size,omitempty"`
	Transcript string        `json:"transcript,omitempty"`
	Saved      *record.Usage `json:"saved,omitempty"`
	// Children are the delegate calls the recorded visit made, in order:
	// the walk makes them again before it takes the answer.
	Children []ReusedChild `json:"children,omitempty"`
}

// ReusedChild is one delegate call of a recorded visit.
type ReusedChild struct {
	Path   string `json:"path"`
	Agent  string `json:"agent"`
	Task   string `json:"task"`
	OK     bool   `json:"ok,omitempty"`
	Answer string `json:"answer,omitempty"`
}

// reused is what the run's input carries of the recordings c.Reuse
// names, packed (packReused); nil when it names none.
func (c *Client) reused(opts engine.Options) ([]byte, error) {
	if c.Reuse == nil || len(c.Reuse.Dirs) == 0 {
		return nil, nil
	}
	set, err := reuse.Open(c.Reuse.RunsDir, c.Reuse.Dirs...)
	if err != nil {
		return nil, err
	}
	visits := map[string]ReusedVisit{}
	for key, r := range set.Remote().Recorded() {
		v := ReusedVisit{Run: r.Run, Visit: r.Fact.Visit, Output: r.Fact.Output, Transcript: r.Transcript, Saved: r.Fact.Usage}
		if r.File != "" {
			v.File, v.Size = r.File, r.Fact.Size
		}
		for _, k := range r.Children {
			v.Children = append(v.Children, ReusedChild{Path: k.Path, Agent: k.Agent, Task: k.Task, OK: k.OK, Answer: k.Answer})
		}
		visits[key] = v
	}
	var known *secret.Redactor
	if !c.Key.Set() {
		known = secret.New(append(secret.FromEnviron(os.Environ()), opts.Secrets...)...)
	}
	return packReused(visits, known)
}

// packReused is visits as gzipped JSON. known is nil when a key seals
// the run's payloads; otherwise visits that hold one of its secrets are
// refused, and what has the shape of a secret is masked, as in every
// payload without a key (plainPayloads: masked before compression, which
// would hide it from the codec).
func packReused(visits map[string]ReusedVisit, known *secret.Redactor) ([]byte, error) {
	raw, err := json.Marshal(visits)
	if err != nil {
		return nil, err
	}
	if known != nil {
		if known.Contains(raw) {
			return nil, &engine.RefusedError{Msg: "the recorded visits --reuse would hand the run hold a secret, and Temporal's history would keep it in clear: " +
				"set temporal.key (FLOW_TEMPORAL_KEY) on the client and the workers, or run without --reuse (docs/reuse-and-tests.md)"}
		}
		raw = secret.MaskShapes(raw)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if b.Len() > maxReused {
		return nil, &engine.RefusedError{Msg: fmt.Sprintf("the %d recorded visits --reuse would hand the run take %d KiB compressed, more than a run on Temporal carries (%d KiB): "+
			"reuse from one run (--reuse=RUN), or run without --temporal to reuse them all (docs/reuse-and-tests.md)", len(visits), b.Len()>>10, maxReused>>10)}
	}
	return b.Bytes(), nil
}
