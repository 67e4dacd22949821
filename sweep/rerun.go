package sweep

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/schema"
)

// StatusQuota is a cell whose run ended on a quota that will not come back
// within the sweep (a daily or billing limit, as the provider says): it is
// not scored, its note carries the provider's message, and `flow sweep
// --resume` runs it again once the quota is back (docs/sweeps.md).
const StatusQuota CellStatus = "quota"

// MaxReruns bounds how often one cell is run again after an
// infrastructure failure; a cell still failing so after it is set aside
// (StatusSkipped, with a note), never scored.
const MaxReruns = 10

// infrastructure says whether an outcome is the infrastructure's rather
// than the model's: a refusal for now (`rate_limit`), a program that
// could not start (`unavailable`), or a worker killed by a signal flow
// did not send (exit status 137, SIGKILL: the out-of-memory killer). Such a
// cell is run again, never scored.
func infrastructure(o *Outcome) bool {
	if o == nil || o.Status != record.StatusFailed {
		return false
	}
	switch schema.FailKind(o.Failure) {
	case schema.FailRateLimit:
		return !quota(o)
	case schema.FailUnavailable:
		return true
	case schema.FailProvider:
		// A CLI driver says so by its exit status; the exec driver names
		// the signal.
		return strings.Contains(o.Message, "exited with status 137") || strings.Contains(o.Message, "was killed by signal 9")
	}
	return false
}

// quota says whether an outcome ended on a quota that is gone.
func quota(o *Outcome) bool {
	return o != nil && o.Failure == string(schema.FailRateLimit) && strings.HasPrefix(o.Message, schema.QuotaPrefix)
}

// setAside says whether a cell was set aside on the infrastructure by an
// earlier run of the sweep (a quota, or still failing after MaxReruns):
// its run ended failed, so `--resume` resumes it rather than reading it.
func setAside(c *Cell) bool {
	return c.Outcome != nil && (c.Status == StatusQuota || (c.Status == StatusSkipped && (quota(c.Outcome) || infrastructure(c.Outcome))))
}

// rerun runs a cell's run again after an infrastructure failure, by
// resuming it: what ended well stays, nothing is paid for twice, and the
// visit that the infrastructure failed runs again (paced by its provider
// key's limiter).
func (r *run) rerun(ctx context.Context, c *Cell, a Assignment) (*Outcome, []*record.Fact) {
	r.s.mu.Lock()
	c.Reruns++
	r.saved(r.s.saveLocked())
	r.s.mu.Unlock()
	cells := filepath.Join(r.s.dir, cellsDir)
	eo, host := r.opts.Engine, r.opts.Host
	host.RunsDir, eo.RunID, eo.Input, eo.Settings, eo.Live, eo.Asker = cells, c.Run, c.Input, a.Settings(r.opts.Settings), r.live, nil
	eo.OnEvent = r.waits(c, eo.OnEvent)
	dir := filepath.Join(cells, c.Run)
	_, err := r.opts.Backend.Resume(ctx, dir, host, eo)
	o, info, rerr := readOutcome(dir, scoreOf(r.plan))
	switch {
	case rerr != nil && ctx.Err() != nil:
		return &Outcome{Status: record.StatusStopped, Message: rerr.Error()}, nil
	case rerr != nil:
		msg := rerr.Error()
		if err != nil {
			msg = err.Error()
		}
		return &Outcome{Status: record.StatusFailed, Failure: string(schema.FailRefused), Message: msg}, nil
	case o.Status == record.StatusSucceeded || o.Status == record.StatusFailed:
		return o, info.Facts
	}
	return o, nil
}

// limits notes the limiters' figures since the sweep (or this resume of
// it) started, for the report; s.mu is held.
func (r *run) limitsLocked() {
	var rows []ProviderRow
	for _, st := range ratelimit.Default.Stats() {
		before := r.limitBase[st.Key]
		row := ProviderRow{Provider: st.Key.String(), Requests: st.Requests - before.Requests, Refused: st.Refused - before.Refused,
			Waits: st.Waits - before.Waits, WaitedMS: (st.Waited - before.Waited).Milliseconds(), Quota: st.Quota}
		if row.Requests == 0 {
			continue
		}
		first := st.First
		if !before.Last.IsZero() {
			first = before.Last
		}
		if span := st.Last.Sub(first); span > 0 {
			row.PerMinute = float64(row.Requests) / span.Minutes()
		}
		rows = append(rows, row)
	}
	r.s.f.Providers = rows
}

// ProviderRow is what one provider key's limiter saw during a sweep (in
// this process): requests, refusals for now (429s, overloads), the waits it
// imposed and the effective rate.
type ProviderRow struct {
	Provider  string  `json:"provider"` // driver, server, model
	Requests  int     `json:"requests"`
	Refused   int     `json:"refused"`
	Waits     int     `json:"waits"`
	WaitedMS  int64   `json:"waited_ms"`
	PerMinute float64 `json:"per_minute"` // requests per minute, first to last
	Quota     string  `json:"quota,omitempty"`
}

// waits hands on every event to next, and tells OnCell when the cell's
// run waits for its provider's rate limit (a progress event saying
// "waiting … (rate limit)"), so the sweep's progress does not look stuck.
func (r *run) waits(c *Cell, next func(*record.Event)) func(*record.Event) {
	return func(e *record.Event) {
		if next != nil {
			next(e)
		}
		if e.Type != record.EventProgress || !strings.HasSuffix(e.Activity, "(rate limit)") {
			return
		}
		r.s.mu.Lock()
		ev := CellEvent{Cell: *c, Waiting: e.Activity, Of: len(r.s.f.Cells)}
		r.s.mu.Unlock()
		r.notify(ev)
	}
}
