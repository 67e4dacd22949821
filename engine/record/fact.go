package record

import (
	"time"

	"github.com/flowrun/flow/schema"
)

// FactType names a line of journal.jsonl.
type FactType string

// The fact types (docs/run-directory.md).
const (
	// FactRun marks the run's start (Status running, Input) or end
	// (Status, OK, Error, WallMS). A resumed attempt adds a start of its own.
	FactRun FactType = "run"
	// FactStart marks a visit's start.
	FactStart FactType = "start"
	// FactEnd marks a visit's end with its whole outcome: enough to rebuild
	// its value without running it again.
	FactEnd FactType = "end"
	// FactWorktree marks an isolated scope's worktree made (or made again
	// by a resume) or removed, in Worktree (docs/worktrees.md).
	FactWorktree FactType = "worktree"
	// FactLand records how an isolated scope landed on the run's
	// integration branch, in Worktree: written once the branch has moved,
	// before anything goes on, so that a resume never lands a scope twice.
	FactLand FactType = "land"
)

// Status is a run's status word.
type Status string

// The run statuses. Running and interrupted are read off a run that has no
// end fact: its engine is alive (it holds the lock) or it is not.
const (
	StatusRunning     Status = "running"
	StatusSucceeded   Status = "succeeded"
	StatusFailed      Status = "failed"
	StatusStopped     Status = "stopped"
	StatusInterrupted Status = "interrupted"
	// StatusCorrupt is a run whose journal has a line that is not a fact
	// (other than a torn last one): it is listed, with the file and line
	// in Why, and cannot be resumed.
	StatusCorrupt Status = "corrupt"
)

// Scope names a memory scope's session: the scope's path (also its home)
// and the agent whose session it is (docs/flow-files.md, agent: memory). It is comparable, so it
// keys the engine's sessions.
type Scope struct {
	Path  string `json:"path"`
	Agent string `json:"agent"`
}

// Fact is one line of journal.jsonl. Which fields are set depends on Type.
type Fact struct {
	Type  FactType    `json:"type"`
	Time  time.Time   `json:"time"`
	Visit string      `json:"visit,omitempty"`
	Node  string      `json:"node,omitempty"`
	Kind  schema.Kind `json:"kind,omitempty"`
	// Agent is the agent of an agent visit: usage.json totals per agent.
	Agent  string   `json:"agent,omitempty"`
	OK     *bool    `json:"ok,omitempty"`
	Output any      `json:"output,omitempty"`
	Error  *Failure `json:"error,omitempty"`
	// File is where an answer too long to hand on whole was written; Output
	// then holds its first bytes, and Size its whole length.
	File     string  `json:"file,omitempty"`
	Size     int64   `json:"size,omitempty"`
	Skipped  bool    `json:"skipped,omitempty"`
	Usage    *Usage  `json:"usage,omitempty"`
	Model    string  `json:"model,omitempty"`
	Timeout  string  `json:"timeout,omitempty"` // the resolved bound on each turn, or on a run node's command
	Attempts int     `json:"attempts,omitempty"`
	Session  string  `json:"session,omitempty"`
	Scope    *Scope  `json:"scope,omitempty"`  // the memory scope the session belongs to
	Answer   *Answer `json:"answer,omitempty"` // an ask's: who answered and when
	WallMS   int64   `json:"wall_ms,omitempty"`
	// Worktree is an isolated scope's working copy: on worktree and land
	// facts, and on the end of a visit that ran in one.
	Worktree *Worktree `json:"worktree,omitempty"`
	// Worker and Transcript say where a leaf ran when a remote worker ran
	// it (flow worker, docs/temporal.md): the worker's own task queue, and
	// the transcript's path on that worker's machine.
	Worker     string `json:"worker,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	// Key is a leaf visit's key and its parts (docs/reuse-and-tests.md);
	// Reused, on the end of a visit answered from an earlier run, names
	// that run's visit and what it spent (this one spent nothing).
	Key    *schema.VisitKey `json:"key,omitempty"`
	Reused *Reused          `json:"reused,omitempty"`
	// Sent are the attempts of an agent visit that a Temporal worker sent
	// and did not see to their end (it died or stopped): each was paid
	// for, and Attempts and Usage count them (docs/temporal.md).
	Sent []Sent `json:"sent,omitempty"`
	// Parent, on the start of a delegated child's visit, is the visit of
	// the turn that started it; the start's Input is its task
	// (docs/delegation.md).
	Parent string `json:"parent,omitempty"`
	// Tool is a tool fact's call and result (docs/native.md).
	Tool *ToolCall `json:"tool,omitempty"`
	// Wait is a waiting fact's: what the visit waits for, since and until
	// when (docs/waits.md).
	Wait *Wait `json:"wait,omitempty"`

	// Run facts.
	RunID  string `json:"run,omitempty"`
	Flow   string `json:"flow,omitempty"`
	Status Status `json:"status,omitempty"`
	Input  any    `json:"input,omitempty"`
	// Resumed marks the run fact of a resumed attempt.
	Resumed bool `json:"resumed,omitempty"`
	// ForkedFrom, on a fork's first run fact, is where it came from.
	ForkedFrom *Fork `json:"forked_from,omitempty"`
	// Overspend, on a run's end fact, names each budget the run ended
	// above: every reader says it from here.
	Overspend []Overspend `json:"overspend,omitempty"`
	// InfraInTree, on a run's end fact, says a delegated child failed on
	// the infrastructure (rate_limit, unavailable, killed), so its
	// parent's answer was not kept (docs/delegation.md).
	InfraInTree bool `json:"infra_in_tree,omitempty"`
}

// Answer is who answered an ask visit, and when; the answer itself is the
// end fact's output. A resume replays the ended ask with it.
type Answer struct {
	// By is who answered: the name of the API token (flow serve), or
	// "terminal" (flow run). Empty when the default was taken.
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
	// Default says nobody answered: the run was unattended, or the ask's
	// timeout passed, and the default was taken.
	Default bool `json:"default,omitempty"`
}

// Succeeded reports whether an end fact says the visit succeeded.
func (f *Fact) Succeeded() bool { return f.OK != nil && *f.OK }

// Reused names the recorded visit a reused visit took its outcome from:
// its run (or cassette), its visit path, and what it spent, which the
// reusing run saved.
type Reused struct {
	Run   string `json:"run"`
	Visit string `json:"visit"`
	Saved *Usage `json:"saved,omitempty"`
}

// Sent is an attempt of a turn that was sent and never ended: the worker
// that ran it, and its tokens as it last reported them (nil: it reported
// none, so its spend is unknown).
type Sent struct {
	Attempt int    `json:"attempt"`
	Worker  string `json:"worker,omitempty"`
	Tokens  *int64 `json:"tokens"`
}
