package reuse

import (
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
)

// A run on Temporal reuses from the recordings of this machine too
// (docs/reuse-and-tests.md, "On Temporal"): the client opens them as a
// local run does and hands the workflow the recorded visits it may take
// (Recorded), which its walk answers from without running them. A few
// visits cannot be taken there, and run live: Remote marks a Set so, and
// flow plan --reuse --temporal says why (Dry).

// Why a recorded visit is not taken by a run on Temporal.
const (
	awayMemory   = "a memory scope's turn runs live on Temporal: its recorded session is not on the workers"
	awayIsolated = "an isolated scope's visit runs live on Temporal: its recorded change is not made again on a worker's clone"
	awayWorkdir  = "a run: node that says reuse: true runs again on Temporal: its working directory's content is a worker's, not read here"
)

// Remote is s as the recordings of a run whose leaves run on Temporal's
// workers: the visits Away names are not taken from it.
func (s *Set) Remote() *Set {
	c := *s
	c.remote = true
	return &c
}

// away says why a recorded visit h is not taken by a run on Temporal, or
// "" when it is (or s is not Remote).
func (s *Set) away(h hit) string {
	if !s.remote {
		return ""
	}
	return Away(h.fact)
}

// awayKey is away of the recorded visit of k, if there is one.
func (s *Set) awayKey(k *flows.VisitKey) string {
	if k == nil {
		return ""
	}
	if h, ok := s.lookup(k.Key); ok {
		return s.away(h)
	}
	return ""
}

// Away says why the recorded end f is not taken by a run on Temporal,
// "" when it may be: a memory scope's turn (its session is this
// machine's CLI's), an isolated scope's visit (its change would be made
// again on a worker's clone), a command whose key holds its working
// directory's content (a worker's, which the walk does not read).
func Away(f *record.Fact) string {
	switch {
	case f.Session != "":
		return awayMemory
	case f.Key != nil && f.Key.Isolated:
		return awayIsolated
	case f.Key != nil && f.Key.Parts[flows.KeyWorkdir] != "":
		return awayWorkdir
	}
	return ""
}

// Recorded is one recorded visit a run elsewhere may take: its end fact
// and where its files are on this machine.
type Recorded struct {
	Run  string // the recording's name (a run id)
	Fact *record.Fact
	// File and Transcript are the recorded answer file and transcript
	// (the recorded visit's home) on this machine, "" if none.
	File, Transcript string
	// Children are the delegate calls the visit made, in order.
	Children []Child
}

// Child is one delegate call a recorded visit made: the agent and task,
// whether the child succeeded and its answer.
type Child struct {
	Path, Agent, Task string
	OK                bool
	Answer            string
}

// Recorded are the visits of s a run may take, by key, the first
// recording holding a key answering it; on a Remote set, without those
// Away names.
func (s *Set) Recorded() map[string]Recorded {
	out := make(map[string]Recorded, len(s.byKey))
	for key, h := range s.byKey {
		if s.away(h) != "" {
			continue
		}
		r := Recorded{Run: h.rec.Name, Fact: h.fact, File: h.rec.locate(h.fact.File), Transcript: transcriptOf(h)}
		for _, c := range h.rec.kids[h.fact.Visit] {
			r.Children = append(r.Children, Child{Path: c.path, Agent: c.agent, Task: c.task, OK: c.ok, Answer: c.answer})
		}
		out[key] = r
	}
	return out
}

// transcriptOf is the recorded visit's transcript on this machine: the
// one its end fact names, else its home, where the transcript is.
func transcriptOf(h hit) string {
	if h.fact.Transcript != "" {
		return h.rec.locate(h.fact.Transcript)
	}
	if p := rundir.Home(h.rec.Dir, h.fact.Visit); within(h.rec.Dir, p) {
		return p
	}
	return ""
}
