package record

import (
	"time"

	"github.com/flowrun/flow/schema"
)

// One struct per fact type, each with what a fact of that type holds and
// nothing else, and one encoding: each writes itself as a Fact (its
// Fact method), the line of journal.jsonl every reader reads. A writer
// says which fact it records by its struct, and cannot set a field its
// type does not carry; the readers keep reading the one Fact.

// RunStarted starts a run, or a resumed attempt of it.
type RunStarted struct {
	Time    time.Time
	Run     string
	Flow    string
	Input   any
	Resumed bool
	// ForkedFrom is where a fork came from (flow fork), on its first start.
	ForkedFrom *Fork
}

// Fact is the run fact with status running.
func (s RunStarted) Fact() *Fact {
	return &Fact{Type: FactRun, Time: s.Time, RunID: s.Run, Flow: s.Flow, Status: StatusRunning, Input: s.Input, Resumed: s.Resumed, ForkedFrom: s.ForkedFrom}
}

// Fork is where a forked run came from (flow fork, docs/fork-and-diff.md):
// the run and the visit it was forked at, and what the fork changed, each
// as the command line said it (input x=2, assign coder=m2, set v=…).
type Fork struct {
	Run     string   `json:"run"`
	Visit   string   `json:"visit"`
	Changes []string `json:"changes,omitempty"`
}

// RunEnded ends a run: how it ended, and each budget it ended above.
type RunEnded struct {
	Time      time.Time
	Run       string
	Status    Status
	OK        bool
	Error     *Failure
	WallMS    int64
	Overspend []Overspend
	// InfraInTree: a delegated child failed on the infrastructure.
	InfraInTree bool
}

// Fact is the run fact with the run's end status.
func (e RunEnded) Fact() *Fact {
	ok := e.OK
	return &Fact{Type: FactRun, Time: e.Time, RunID: e.Run, Status: e.Status, OK: &ok, Error: e.Error, WallMS: e.WallMS, Overspend: e.Overspend, InfraInTree: e.InfraInTree}
}

// VisitStarted starts a visit.
type VisitStarted struct {
	Time  time.Time
	Visit string
	Node  string
	Kind  schema.Kind
	// Parent and Input are a delegated child's: the visit of the turn that
	// started it, and the task it was given (docs/delegation.md).
	Parent string
	Input  any
}

// Fact is the start fact.
func (s VisitStarted) Fact() *Fact {
	return &Fact{Type: FactStart, Time: s.Time, Visit: s.Visit, Node: s.Node, Kind: s.Kind, Parent: s.Parent, Input: s.Input}
}

// VisitEnded ends a visit with its whole outcome (the fields are Fact's).
type VisitEnded struct {
	Time       time.Time
	Visit      string
	Node       string
	Kind       schema.Kind
	Agent      string
	OK         bool
	Output     any
	Error      *Failure
	File       string
	Size       int64
	Skipped    bool
	Usage      *Usage
	Model      string
	Timeout    string
	Attempts   int
	Session    string
	Scope      *Scope
	Answer     *Answer
	WallMS     int64
	Worktree   *Worktree
	Worker     string
	Transcript string
	Key        *schema.VisitKey
	Reused     *Reused
	Sent       []Sent
}

// Fact is the end fact.
func (e VisitEnded) Fact() *Fact {
	ok := e.OK
	return &Fact{Type: FactEnd, Time: e.Time, Visit: e.Visit, Node: e.Node, Kind: e.Kind, Agent: e.Agent, OK: &ok,
		Output: e.Output, Error: e.Error, File: e.File, Size: e.Size, Skipped: e.Skipped, Usage: e.Usage, Model: e.Model,
		Timeout: e.Timeout, Attempts: e.Attempts, Session: e.Session, Scope: e.Scope, Answer: e.Answer, WallMS: e.WallMS,
		Worktree: e.Worktree, Worker: e.Worker, Transcript: e.Transcript, Key: e.Key, Reused: e.Reused, Sent: e.Sent}
}

// WorktreeMade records an isolated scope's working copy made, or made
// again by a resume: its repository, path, branch, base and head.
type WorktreeMade struct {
	Time     time.Time
	Worktree *Worktree
}

// Fact is the worktree fact.
func (m WorktreeMade) Fact() *Fact {
	return &Fact{Type: FactWorktree, Time: m.Time, Worktree: m.Worktree}
}

// WorktreeRemoved records the removal of scope's working copy.
type WorktreeRemoved struct {
	Time  time.Time
	Scope string
}

// Fact is the worktree fact that says Removed.
func (m WorktreeRemoved) Fact() *Fact {
	return &Fact{Type: FactWorktree, Time: m.Time, Worktree: &Worktree{Scope: m.Scope, Removed: true}}
}

// ScopeLanded records how the scope of visit landed (Worktree.Land), and
// the conflict that failed it.
type ScopeLanded struct {
	Time     time.Time
	Visit    string
	Worktree *Worktree
	Error    *Failure
}

// Fact is the land fact.
func (l ScopeLanded) Fact() *Fact {
	return &Fact{Type: FactLand, Time: l.Time, Visit: l.Visit, Worktree: l.Worktree, Error: l.Error}
}
