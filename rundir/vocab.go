package rundir

import "github.com/flowrun/flow/engine/record"

// The walker's vocabulary (package engine/record), under the names the run
// directory's many readers know it by: the run directory stores it, and
// defines none of it.
type (
	Fact       = record.Fact
	FactType   = record.FactType
	Status     = record.Status
	Scope      = record.Scope
	Answer     = record.Answer
	Reused     = record.Reused
	Failure    = record.Failure
	Usage      = record.Usage
	Event      = record.Event
	EventType  = record.EventType
	Overspend  = record.Overspend
	QuotaError = record.QuotaError
	Worktree   = record.Worktree
	Landing    = record.Landing
	Sent       = record.Sent
	ToolCall   = record.ToolCall
)

// The fact types, statuses, event types and landings (package engine/record).
const (
	FactRun      = record.FactRun
	FactStart    = record.FactStart
	FactEnd      = record.FactEnd
	FactWorktree = record.FactWorktree
	FactLand     = record.FactLand
	FactTool     = record.FactTool

	StatusRunning     = record.StatusRunning
	StatusSucceeded   = record.StatusSucceeded
	StatusFailed      = record.StatusFailed
	StatusStopped     = record.StatusStopped
	StatusInterrupted = record.StatusInterrupted
	StatusCorrupt     = record.StatusCorrupt

	EventRunStart      = record.EventRunStart
	EventRunEnd        = record.EventRunEnd
	EventVisitStart    = record.EventVisitStart
	EventVisitEnd      = record.EventVisitEnd
	EventVisitReplayed = record.EventVisitReplayed
	EventProgress      = record.EventProgress
	EventNote          = record.EventNote

	Landed       = record.Landed
	LandConflict = record.LandConflict
	LandKept     = record.LandKept
)

// ErrRateLimit is record.ErrRateLimit: a provider refused the turn for now.
var ErrRateLimit = record.ErrRateLimit

// RateLimited is record.RateLimited.
func RateLimited(err error) *Failure { return record.RateLimited(err) }

// OverspendText is record.OverspendText.
func OverspendText(over []Overspend) string { return record.OverspendText(over) }

// Worktrees is record.Worktrees: one record per scope.
func Worktrees(facts []*Fact) []*Worktree { return record.Worktrees(facts) }

// Kept is record.Kept: the worktrees made and not removed.
func Kept(facts []*Fact) []*Worktree { return record.Kept(facts) }
