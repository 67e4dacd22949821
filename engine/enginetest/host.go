// Package enginetest is an in-memory Host for the walker's tests: scripted
// leaves, a fake clock, groups that run their tasks one after another in
// index order, and facts kept in memory. It touches nothing outside the
// process, so a walk on it shows what the walker itself decides
// (docs/decisions.md, "A pure walker").
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/internal/secret"
)

// Epoch is the fake clock's time when a Host is made.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Host is an in-memory engine.Host. Turns and Commands answer leaves; nil
// ones answer every turn "ok" (or, with an output schema, the smallest
// value of its shape: see Smallest) and pass every command.
type Host struct {
	Turns    func(t *engine.Turn) (*engine.TurnResult, error)
	Commands func(c *engine.Command) (*engine.CommandResult, error)
	// Dir is the host's WorkDir: where its leaves are told they work.
	Dir string

	mu     sync.Mutex // a walk's tasks run one at a time, but callers may read concurrently
	now    time.Time
	facts  []*record.Fact
	events []*record.Event
	values map[string]any
	output any

	delegates map[string]engine.DelegateHandler // open delegations, by token
	served    int
	delivered map[string]*engine.Delivery // events delivered to the run, by name
}

// New returns a Host whose clock reads Epoch.
func New() *Host { return &Host{now: Epoch} }

var _ engine.Host = (*Host)(nil)

// Facts are the facts recorded so far.
func (h *Host) Facts() []*record.Fact {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*record.Fact(nil), h.facts...)
}

// Values are the run's node values, once it ended.
func (h *Host) Values() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.values
}

// Output is the run's output, once it ended.
func (h *Host) Output() any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.output
}

// Now is the fake clock.
func (h *Host) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// Sleep moves the fake clock on by d at once, unless ctx ended.
func (h *Host) Sleep(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
	return nil
}

// Group runs the tasks one after another in index order, whatever the
// limit, on the caller's goroutine: a walk on this host is the same walk
// every time.
func (h *Host) Group(ctx context.Context, count, limit int, failFast error, task func(ctx context.Context, i int) bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for i := range count {
		if failFast != nil && ctx.Err() != nil {
			continue // skipped: a sibling failed first
		}
		if task(ctx, i) && failFast != nil {
			cancel(failFast)
		}
	}
}

// errDeadlock is what a wait that could never end on this host returns:
// tasks run one at a time, so nothing else would ever release it.
var errDeadlock = errors.New("enginetest: a wait that nothing can end (tasks run one at a time)")

type slots struct{ held, n int }

func (s *slots) Acquire(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if s.held >= s.n {
		return errDeadlock
	}
	s.held++
	return nil
}

func (s *slots) Release() { s.held-- }

func (s *slots) Lock(ctx context.Context) error { return s.Acquire(ctx) }

func (s *slots) Unlock() { s.Release() }

func (h *Host) NewMutex() engine.Mutex { return &slots{n: 1} }

func (h *Host) NewSemaphore(n int) engine.Semaphore { return &slots{n: n} }

type latch struct{ open bool }

func (l *latch) Open()        { l.open = true }
func (l *latch) IsOpen() bool { return l.open }
func (l *latch) Wait(ctx context.Context) error {
	if l.open {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return errDeadlock
}

// NewLock returns a sync.Mutex: tasks take turns, but a test may read
// what they guard from another goroutine.
func (h *Host) NewLock() engine.Locker { return &sync.Mutex{} }

func (h *Host) NewLatch() engine.Latch { return &latch{} }

// Turn answers a turn by the script.
func (h *Host) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if h.Turns != nil {
		return h.Turns(t)
	}
	out := "ok"
	if len(t.OutputSchema) > 0 {
		var s map[string]any
		if err := json.Unmarshal(t.OutputSchema, &s); err != nil {
			return nil, fmt.Errorf("enginetest: reading the output schema of %s: %w", t.Visit, err)
		}
		b, _ := json.Marshal(Smallest(s))
		out = string(b)
	}
	one := int64(1)
	return &engine.TurnResult{Status: engine.Completed, Output: out, Usage: record.Usage{Input: &one, Output: &one}}, nil
}

// Command answers a command by the script.
func (h *Host) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if h.Commands != nil {
		return h.Commands(c)
	}
	return &engine.CommandResult{Passed: true, Report: "ok"}, nil
}

// Smallest is a value of the JSON schema s: true (a loop `until` a
// boolean ends), 0, "ok", empty arrays, and objects with every property.
func Smallest(s map[string]any) any {
	switch s["type"] {
	case "boolean":
		return true
	case "integer", "number":
		return 0
	case "array":
		return []any{}
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			ps, _ := p.(map[string]any)
			out[k] = Smallest(ps)
		}
		return out
	}
	return "ok"
}

func (h *Host) Fact(f *record.Fact) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.facts = append(h.facts, f)
	return nil
}

func (h *Host) Event(e *record.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	return nil
}

// Home names a home by its path in the run.
func (h *Host) Home(path string) string { return path }

// RedactHome does nothing: no leaf writes anywhere.
func (h *Host) RedactHome(string, time.Time) error { return nil }

func (h *Host) WriteValues(values map[string]any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values = values
	return nil
}

func (h *Host) Finish(output any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.output = output
	return nil
}

// Redactor is nil: nothing secret reaches this host.
func (h *Host) Redactor() *secret.Redactor { return nil }

// Workspace is nil: isolated scopes are refused on this host.
func (h *Host) Workspace() worktrees.Workspace { return nil }

// Blind is false: the walker's watch reaches the scripted turns.
func (h *Host) Blind() bool { return false }

// RunDir is "": the host keeps no run directory.
func (h *Host) RunDir() string { return "" }

// WorkDir is Dir: where the scripted leaves are told they work.
func (h *Host) WorkDir() string { return h.Dir }

// Delegator is the host itself: its scripted leaves make a turn's
// delegate calls with Delegate.
func (h *Host) Delegator() engine.Delegator { return h }

// Serve keeps the turn's handler under a token of its own, for Delegate.
func (h *Host) Serve(ctx context.Context, visit string, handle engine.DelegateHandler) (*engine.Delegation, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.delegates == nil {
		h.delegates = map[string]engine.DelegateHandler{}
	}
	h.served++
	token := fmt.Sprintf("t%d", h.served)
	h.delegates[token] = handle
	return &engine.Delegation{Socket: "enginetest", Token: token, Server: []string{"enginetest"}}, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.delegates, token)
	}, nil
}

// Delegate makes a delegate call of turn t, as a driver would: the reply
// of the walker, or an error when t may not delegate or its turn ended.
func (h *Host) Delegate(ctx context.Context, t *engine.Turn, agent, task string) (engine.DelegateReply, error) {
	if t.Delegate == nil {
		return engine.DelegateReply{}, errors.New("enginetest: the turn may not delegate")
	}
	h.mu.Lock()
	handle := h.delegates[t.Delegate.Token]
	h.mu.Unlock()
	if handle == nil {
		return engine.DelegateReply{}, errors.New("enginetest: the turn's delegation is closed")
	}
	return handle(ctx, engine.DelegateRequest{Token: t.Delegate.Token, Agent: agent, Task: task}), nil
}
