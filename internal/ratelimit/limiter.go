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
	// MaxWait caps every wait a provider's header asks for — a
	// Retry-After, a reset with nothing left (default DefaultMaxWait, the
	// configuration key ratelimit.max_wait): a server that says "come
	// back in 9999 years" holds a key back for MaxWait at most.
	MaxWait time.Duration
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
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
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
	untilSaid string    // the header that set until; "" for flow's own backoff
	least     int       // the least any answer since the provider's last stated reset said remains; math.MaxInt: none said
	leftUntil time.Time // the reset the provider stated; zero when none is known
	leftSaid  string    // the header that stated it
	probe     int       // the admission of the request finding out what a passed reset renewed; 0: none
	decreased time.Time // the last halving of the window
	refusals  int       // refusals in a row
	quotaAt   time.Time // when the quota was seen
	changed   chan struct{}
	seq       int          // admissions so far
	open      map[int]bool // the requests in flight, by admission: whether their answer's header came
	stats     Stats
}

func newLimiter(k Key, o Options) *Limiter {
	o = o.withDefaults()
	return &Limiter{key: k, opts: o, window: float64(o.Initial), changed: make(chan struct{}), open: map[int]bool{}, least: math.MaxInt, stats: Stats{Key: k}}
}

// Ticket is one admitted request; Done it exactly once.
type Ticket struct {
	l     *Limiter
	start time.Time
	seq   int // its admission's number
	once  sync.Once
	heard sync.Once
}

// minSleep bounds how often a waiting Acquire wakes, and reportEvery how
// often it tells onWait: however a wait comes out, no loop spins.
const (
	minSleep    = time.Millisecond
	reportEvery = time.Second
)

// Acquire waits until l admits one request, or ctx ends (its cause), or
// the key's quota is gone (a *QuotaError), or the wait is longer than ctx
// has left (a *WaitError, at once: the turn is rate-limited, and sitting
// out its timeout would only say it timed out). onWait, when not nil, is
// told of a timed wait before it starts, with its length, so that progress
// can say "waiting 12 s for … (rate limit)" rather than look stuck — at
// most once a second.
func (l *Limiter) Acquire(ctx context.Context, onWait func(time.Duration)) (*Ticket, error) {
	var told time.Time
	waited := false // a wait ended early by an answer counts once
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
		wake, why := l.until, l.untilSaid
		left := l.remaining()
		// A wait on what remains ends early when an answer comes: answers
		// arrive out of the order the provider counted them, and a later
		// one may say a slot is free after all.
		var answers chan struct{}
		if left <= 0 && now.Before(l.leftUntil) && l.leftUntil.After(wake) {
			wake, why, answers = l.leftUntil, l.leftSaid, l.changed
		}
		if now.Before(wake) {
			// wake is at most MaxWait (or the backoff's Cap) from when it
			// was set: d is positive and bounded.
			d := wake.Sub(now)
			if dl, ok := ctx.Deadline(); ok && d > dl.Sub(now) {
				l.mu.Unlock()
				return nil, &WaitError{Key: l.key, Wait: d, Said: why, Left: max(dl.Sub(now), 0)}
			}
			// Each waiter ends the wait at its own moment within Spread.
			d = max(d+time.Duration(min(max(l.opts.Rand(), 0), 1)*float64(l.opts.Spread)), minSleep)
			if !waited {
				l.stats.Waits++
			}
			l.mu.Unlock()
			if onWait != nil && (told.IsZero() || now.Sub(told) >= reportEvery) {
				told = now
				onWait(d)
			}
			waited = true
			err := sleep(ctx, d, answers)
			l.mu.Lock()
			l.stats.Waited += time.Since(now)
			l.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		// The stated reset passed with none left: how much it renewed (a
		// fixed window: all of it; a sliding one: what its oldest requests
		// freed) only an answer says, so one request finds out first.
		stale := left <= 0 && !l.leftUntil.IsZero()
		if l.inflight < int(l.window) && (!stale || l.probe == 0) {
			l.inflight++
			l.stats.Requests++
			if l.stats.First.IsZero() {
				l.stats.First = now
			}
			l.seq++
			l.open[l.seq] = false
			if stale {
				l.probe = l.seq
			}
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

// Heard tells the limiter the header of the ticket's answer as soon as it
// comes, before its body is read: what it says of the provider's limits
// holds from now, while the request keeps its slot until Done. Done's
// Answer.Header is then not read again.
func (t *Ticket) Heard(h http.Header) {
	t.heard.Do(func() { t.l.heard(t, h) })
}

// Done tells the limiter how the ticket's request ended. Calls after the
// first are ignored.
func (t *Ticket) Done(a Answer) {
	t.once.Do(func() {
		t.Heard(a.Header) // a no-op when Heard was called
		t.l.done(t, a)
	})
}

// heard applies the hints of one answer's header.
func (l *Limiter) heard(t *Ticket, header http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if _, ok := l.open[t.seq]; ok {
		l.open[t.seq] = true
	}
	h := parseHints(header, now, l.opts.MaxWait)
	if h.requestsLeft >= 0 {
		reset := now.Add(h.requestsReset.D)
		if l.leftUntil.IsZero() || !now.Before(l.leftUntil) {
			// What was known ended with its reset: this answer says anew.
			l.least, l.leftUntil, l.leftSaid = math.MaxInt, reset, h.requestsReset.Said
		} else if reset.After(l.leftUntil) {
			l.leftUntil, l.leftSaid = reset, h.requestsReset.Said
		}
		l.least = min(l.least, h.requestsLeft)
		if l.probe == t.seq {
			l.probe = 0
		}
	} else if t.seq == l.probe {
		// The probe's answer says nothing of what remains: the provider
		// stopped saying, and the stated reset is forgotten.
		l.least, l.leftUntil, l.leftSaid, l.probe = math.MaxInt, time.Time{}, "", 0
	}
	if h.tokensLeft == 0 {
		if until := now.Add(h.tokensReset.D); until.After(l.until) {
			l.until, l.untilSaid = until, h.tokensReset.Said
		}
	}
	if h.retryAfter.D > 0 {
		if until := now.Add(h.retryAfter.D); until.After(l.until) {
			l.until, l.untilSaid = until, h.retryAfter.Said
		}
	}
	l.wakeLocked()
}

// wakeLocked wakes the requests waiting for a slot or an answer.
func (l *Limiter) wakeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Limiter) done(t *Ticket, a Answer) {
	start := t.start
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.inflight--
	delete(l.open, t.seq)
	if l.probe == t.seq {
		l.probe = 0 // it found nothing out: another may
	}
	l.stats.Last = now
	l.wakeLocked()
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
	// A refusal that named no wait (heard set none) backs off.
	if !l.until.After(now) && !(l.remaining() <= 0 && l.leftUntil.After(now)) {
		l.until, l.untilSaid = now.Add(l.backoff(l.refusals)), ""
	}
}

// remaining is what the provider's answers since its last stated reset
// say remains now: the least any of them says, less every request in
// flight whose answer has not come. A provider counts requests in the
// order they reach it, not the order they were sent, so an answer says
// nothing of which earlier requests it counted: each unheard one may
// still be counted. The figure is low while answers are on their way and
// right once they are all in — a wait on it ends at the next answer
// (Acquire). math.MaxInt when nothing was said.
func (l *Limiter) remaining() int {
	if l.least == math.MaxInt {
		return math.MaxInt
	}
	unheard := 0
	for _, heard := range l.open {
		if !heard {
			unheard++
		}
	}
	return l.least - unheard
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

// sleep waits d, or until early is closed (nil: never), or ctx ends (its
// cause).
func sleep(ctx context.Context, d time.Duration, early <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	case <-early:
	}
	return nil
}
