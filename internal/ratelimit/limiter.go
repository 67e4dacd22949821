package ratelimit

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Options tune a Limiter. The zero value of each field means its default.
type Options struct {
	// Initial is the window a new limiter starts with (default 20, as
	// inspect_ai starts its connections: a key that never refuses should
	// not be held back while the window grows).
	Initial int
	// Max bounds the window (default 100).
	Max int
	// Base and Cap bound the full-jitter backoff after a refusal without
	// a hint (defaults 1 s and 60 s).
	Base, Cap time.Duration
	// Spread is how far apart the waiters of one wait end it (default
	// 100 ms).
	Spread time.Duration
	// QuotaHold is how long a quota that is gone fails every request at
	// once before one request may find out whether it is back (default an
	// hour: a run or a sweep does not outlive it, `flow serve` does).
	QuotaHold time.Duration
	// Rand draws from [0, 1); nil is math/rand/v2.
	Rand func() float64
}

func (o Options) withDefaults() Options {
	if o.Initial <= 0 {
		o.Initial = 20
	}
	if o.Max <= 0 {
		o.Max = 100
	}
	o.Initial = min(o.Initial, o.Max)
	if o.Base <= 0 {
		o.Base = time.Second
	}
	if o.Cap <= 0 {
		o.Cap = time.Minute
	}
	if o.Spread <= 0 {
		o.Spread = 100 * time.Millisecond
	}
	if o.QuotaHold <= 0 {
		o.QuotaHold = time.Hour
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	return o
}

// Answer is how one admitted request ended, as the limiter learns from it.
type Answer struct {
	// Limited says the provider refused it for now (429, overload).
	Limited bool
	// Quota, when set, is the provider's message of a quota that will not
	// come back within the run.
	Quota string
	// Header is the response's header, for its rate-limit hints; nil when
	// there is none (an agent CLI's turn).
	Header http.Header
}

// Stats is what a Limiter saw, for reports.
type Stats struct {
	Key      Key
	Requests int           // requests admitted
	Refused  int           // of them, refused for now (429s, overloads)
	Waits    int           // waits the limiter imposed
	Waited   time.Duration // their total length
	Window   float64       // the concurrency window now
	First    time.Time     // when the first request was admitted
	Last     time.Time     // when the last answer came
	Quota    string        // the quota message, once one was seen
}

// PerMinute is the effective rate: answers per minute between the first
// request and the last answer, or 0 before there is a span to measure.
func (s Stats) PerMinute() float64 {
	span := s.Last.Sub(s.First)
	if span <= 0 || s.Requests == 0 {
		return 0
	}
	return float64(s.Requests) / span.Minutes()
}

// Limiter paces the requests to one Key (see the package documentation).
// Its zero value is not usable; a Registry makes them.
type Limiter struct {
	key  Key
	opts Options

	mu        sync.Mutex
	window    float64
	inflight  int
	until     time.Time // nothing is sent before
	left      int       // requests the provider said remain, until leftUntil
	leftUntil time.Time
	winCount  int       // requests admitted since the last reset passed
	winFresh  bool      // winCount restarted at the reset leftUntil was before
	decreased time.Time // the last halving of the window
	refusals  int       // refusals in a row
	quotaAt   time.Time // when the quota was seen
	changed   chan struct{}
	seq       int              // admissions so far
	open      map[int]struct{} // the seqs of the requests in flight
	stats     Stats
}

func newLimiter(k Key, o Options) *Limiter {
	o = o.withDefaults()
	return &Limiter{key: k, opts: o, window: float64(o.Initial), changed: make(chan struct{}), open: map[int]struct{}{}, stats: Stats{Key: k}}
}

// Ticket is one admitted request; Done it exactly once.
type Ticket struct {
	l     *Limiter
	start time.Time
	seq   int // its admission's number
	once  sync.Once
}

// Acquire waits until l admits one request, or ctx ends (its cause), or
// the key's quota is gone (a *QuotaError). onWait, when not nil, is told
// of each timed wait before it starts, with its length, so that progress
// can say "waiting 12 s for … (rate limit)" rather than look stuck.
func (l *Limiter) Acquire(ctx context.Context, onWait func(time.Duration)) (*Ticket, error) {
	for {
		l.mu.Lock()
		if l.stats.Quota != "" && time.Since(l.quotaAt) >= l.opts.QuotaHold {
			l.stats.Quota = "" // long enough: let one request find out
		}
		if l.stats.Quota != "" {
			msg := l.stats.Quota
			l.mu.Unlock()
			return nil, &QuotaError{Message: msg}
		}
		now := time.Now()
		wake := l.until
		if l.left <= 0 && now.Before(l.leftUntil) && l.leftUntil.After(wake) {
			wake = l.leftUntil
		}
		if now.Before(wake) {
			// Each waiter ends the wait at its own moment within Spread.
			d := wake.Sub(now) + time.Duration(l.opts.Rand()*float64(l.opts.Spread))
			l.stats.Waits++
			l.stats.Waited += d
			l.mu.Unlock()
			if onWait != nil {
				onWait(d)
			}
			if err := sleep(ctx, d); err != nil {
				return nil, err
			}
			continue
		}
		if l.inflight < int(l.window) {
			l.inflight++
			if now.Before(l.leftUntil) {
				l.left--
			} else if !l.winFresh {
				l.winCount, l.winFresh = 0, true // the provider's window began anew
			}
			l.winCount++
			l.stats.Requests++
			if l.stats.First.IsZero() {
				l.stats.First = now
			}
			l.seq++
			l.open[l.seq] = struct{}{}
			tk := &Ticket{l: l, start: now, seq: l.seq}
			l.mu.Unlock()
			return tk, nil
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-changed:
		}
	}
}

// Done tells the limiter how the ticket's request ended. Calls after the
// first are ignored.
func (t *Ticket) Done(a Answer) {
	t.once.Do(func() { t.l.done(t, a) })
}

func (l *Limiter) done(t *Ticket, a Answer) {
	start := t.start
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.inflight--
	delete(l.open, t.seq)
	l.stats.Last = now
	close(l.changed)
	l.changed = make(chan struct{})
	h := parseHints(a.Header, now)
	if h.requestsLeft >= 0 && !h.requestsReset.IsZero() {
		// What the provider said counts this request and those it saw
		// before; requests sent after it may not be counted yet. With the
		// window's limit known, what remains is at most the limit less
		// what this limiter sent since the window began; else count the
		// requests still in flight that were sent after this one as not
		// counted. Answers of one window arrive out of order: keep the
		// least.
		left := h.requestsLeft - l.inflightAfter(t)
		if h.requestsLimit > 0 {
			left = min(h.requestsLeft, h.requestsLimit-l.winCount)
		}
		if h.requestsReset.Sub(l.leftUntil).Abs() > 500*time.Millisecond {
			l.left, l.winFresh = left, false
		} else {
			l.left = min(l.left, left)
		}
		l.leftUntil = h.requestsReset
	}
	if h.tokensLeft == 0 && h.tokensReset.After(l.until) {
		l.until = h.tokensReset
	}
	switch {
	case a.Quota != "":
		l.stats.Quota, l.quotaAt = a.Quota, now
		return
	case !a.Limited:
		l.refusals = 0
		l.window = math.Min(float64(l.opts.Max), l.window+1/l.window)
		return
	}
	l.stats.Refused++
	l.refusals++
	if !start.Before(l.decreased) {
		l.window = math.Max(1, l.window/2)
		l.decreased = now
	}
	wait := h.retryAfter
	if wait <= 0 && !h.requestsReset.IsZero() && h.requestsLeft <= 0 {
		wait = h.requestsReset.Sub(now)
	}
	if wait <= 0 {
		wait = l.backoff(l.refusals)
	}
	if until := now.Add(wait); until.After(l.until) {
		l.until = until
	}
}

// inflightAfter counts the requests in flight that were admitted after t.
func (l *Limiter) inflightAfter(t *Ticket) int {
	n := 0
	for seq := range l.open {
		if seq > t.seq {
			n++
		}
	}
	return n
}

// backoff is the full-jitter wait after the n-th refusal in a row (n ≥ 1):
// uniform in [0, min(Cap, Base·2^(n-1))).
func (l *Limiter) backoff(n int) time.Duration {
	ceil := l.opts.Cap
	if n < 31 {
		ceil = min(ceil, l.opts.Base<<(n-1))
	}
	return time.Duration(l.opts.Rand() * float64(ceil))
}

// Stats returns what l saw so far.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Window = l.window
	return s
}

// Key is the key l paces.
func (l *Limiter) Key() Key { return l.key }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
