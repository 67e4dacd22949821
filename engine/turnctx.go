package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// turnContext is the context a driver gets for one turn: the visit's, with
// the turn's deadline. Arming a deadline — a timer, and a place among the
// parent's children — cost a microsecond a turn, a tenth of a quick visit,
// so it is armed when something first asks for Done: every driver that
// waits on a process or a connection does, and one that answers at once
// never waits. Until then Err and cause read the clock.
type turnContext struct {
	parent   context.Context
	deadline time.Time
	once     sync.Once
	armed    atomic.Pointer[armedDeadline]
}

type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newTurnContext(parent context.Context, deadline time.Time) *turnContext {
	return &turnContext{parent: parent, deadline: deadline}
}

func (c *turnContext) arm() context.Context {
	c.once.Do(func() {
		ctx, cancel := context.WithDeadlineCause(c.parent, c.deadline, errTimeout)
		c.armed.Store(&armedDeadline{ctx, cancel})
	})
	return c.armed.Load().ctx
}

func (c *turnContext) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *turnContext) Done() <-chan struct{} { return c.arm().Done() }

func (c *turnContext) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value is the armed context's once armed, so that context.Cause finds the
// deadline's cause.
func (c *turnContext) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// cause says why the context ended, as context.Cause would had it been
// armed: the parent's cause, or errTimeout.
func (c *turnContext) cause() error {
	if a := c.armed.Load(); a != nil {
		return context.Cause(a.ctx)
	}
	if c.parent.Err() != nil {
		return context.Cause(c.parent)
	}
	if !time.Now().Before(c.deadline) {
		return errTimeout
	}
	return nil
}

// release stops the armed deadline's timer; the turn's owner calls it when
// the turn ends.
func (c *turnContext) release() {
	if a := c.armed.Load(); a != nil {
		a.cancel()
	}
}
