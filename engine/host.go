package engine

import (
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/internal/secret"
)

// Host is where every effect of a walk happens: the walker decides what
// a run does and means, its Host decides where that happens. The clock,
// sleeps, groups of branches and items, mutexes and semaphores (Runtime),
// agent turns and commands (LeafRunner), facts, events and values
// (Recorder), the redactor, and the working copies of isolated scopes
// (Workspace). The local host is this process and its run directory
// (package engine/local); a Temporal workflow is another (package
// temporal). What differs between hosts is only where an effect happens,
// never what it means (docs/decisions.md, "A pure walker").
type Host interface {
	Runtime
	LeafRunner
	Recorder
	// Redactor is what the host redacts in what the walker hands back to
	// its caller (the result, its failure); nil where leaves redact where
	// they run.
	Redactor() *secret.Redactor
	// Workspace is where isolated scopes get their working copies, or nil
	// on a host that has none: a plan with isolation is then refused
	// before the walk.
	Workspace() worktrees.Workspace
	// Blind says the host's turns cannot be watched live (Parts.Blind).
	Blind() bool
	// Delegator serves the delegate calls of the host's turns, or is nil
	// on a host that cannot: a plan that delegates is then refused before
	// the walk.
	Delegator() Delegator
	// Waiter keeps the run's waits, or is nil on a host that cannot: a
	// plan that waits is then refused before the walk (docs/waits.md).
	Waiter() Waiter
	// RunDir is the run's directory as the user named it (events and the
	// Result say it), or "" on a host that keeps none: the run's id is
	// said instead.
	RunDir() string
	// WorkDir is where the run works: the directory of a leaf outside an
	// isolated scope, and what a relative `repo:` is taken from. "" is
	// the directory the leaves run in.
	WorkDir() string
}

// Parts are what NewHost makes a Host of.
type Parts struct {
	Runtime Runtime
	Leaves  LeafRunner
	Recorder
	Redactor  *secret.Redactor    // nil: leaves redact where they run
	Workspace worktrees.Workspace // nil: no working copies on this host
	// Blind says the leaves run where the walker cannot watch a turn live
	// (a Temporal worker): Turn.Watch never reaches the turn, so each turn
	// is bound by what it reserved, which Turn.TokensLeft carries.
	Blind bool
	// Delegator serves turns' delegate calls (docs/delegation.md); nil:
	// no turn on this host may delegate.
	Delegator Delegator
	// Waiter keeps the run's waits (docs/waits.md); nil: no node may wait.
	Waiter  Waiter
	RunDir  string // Host.RunDir
	WorkDir string // Host.WorkDir
}

// hostOf is a Host made of its parts.
type hostOf struct {
	Runtime
	LeafRunner
	Recorder
	p Parts
}

// NewHost makes a Host of its parts.
func NewHost(p Parts) Host {
	return hostOf{Runtime: p.Runtime, LeafRunner: p.Leaves, Recorder: p.Recorder, p: p}
}

func (h hostOf) Redactor() *secret.Redactor { return h.p.Redactor }

func (h hostOf) Blind() bool { return h.p.Blind }

func (h hostOf) RunDir() string { return h.p.RunDir }

func (h hostOf) WorkDir() string { return h.p.WorkDir }

// Delegator is nil, not a nil value in an interface, when h has none.
func (h hostOf) Delegator() Delegator {
	if h.p.Delegator == nil {
		return nil
	}
	return h.p.Delegator
}

// Workspace is nil, not a nil value in an interface, when h has none.
func (h hostOf) Workspace() worktrees.Workspace {
	if h.p.Workspace == nil {
		return nil
	}
	return h.p.Workspace
}

// Waiter is nil, not a nil value in an interface, when h has none.
func (h hostOf) Waiter() Waiter {
	if h.p.Waiter == nil {
		return nil
	}
	return h.p.Waiter
}
