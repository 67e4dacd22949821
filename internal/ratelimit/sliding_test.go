package ratelimit

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sliding is a provider that takes n requests in any window (a sliding
// window) and says on every answer what remains and when it resets: when
// the oldest request leaves the window, or with full when the newest does
// (the window back to its initial state).
type sliding struct {
	n      int
	window time.Duration
	full   bool

	mu      sync.Mutex
	start   time.Time
	recent  []time.Time
	refused []time.Duration // when each refusal came, from the first request
	sent    int
}

func (s *sliding) answer() (http.Header, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.start.IsZero() {
		s.start = now
	}
	s.sent++
	kept := s.recent[:0]
	for _, t := range s.recent {
		if now.Sub(t) < s.window {
			kept = append(kept, t)
		}
	}
	s.recent = kept
	ok := len(s.recent) < s.n
	if ok {
		s.recent = append(s.recent, now)
	}
	reset := s.recent[0].Add(s.window).Sub(now)
	if s.full {
		reset = s.recent[len(s.recent)-1].Add(s.window).Sub(now)
	}
	h := header("x-ratelimit-limit-requests", strconv.Itoa(s.n),
		"x-ratelimit-remaining-requests", strconv.Itoa(s.n-len(s.recent)),
		"x-ratelimit-reset-requests", reset.String())
	if !ok {
		s.refused = append(s.refused, now.Sub(s.start))
		h.Set("retry-after-ms", strconv.FormatInt(max(1, reset.Milliseconds()), 10))
	}
	return h, ok
}

// 39 requests at concurrency 10 against a provider that takes 5 in any
// 5 s, saying what remains and its reset on every answer: after the first
// window, fewer than 5% are refused — the limiter sends nothing before a
// reset the provider stated with none left, and counts the requests in
// flight whose answers have not come. Each request is sent again when
// refused, as the openai driver does. Both meanings of "reset" that
// providers use are tried.
func TestSlidingWindowWaitsForTheReset(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run("full="+strconv.FormatBool(full), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &sliding{n: 5, window: 5 * time.Second, full: full}
				l := newLimiter(Key{Driver: "openai"}, Options{})
				slots := make(chan struct{}, 10)
				var wg sync.WaitGroup
				for range 39 {
					wg.Go(func() {
						slots <- struct{}{}
						defer func() { <-slots }()
						for try := 0; try <= 10; try++ {
							tk, err := l.Acquire(t.Context(), nil)
							if err != nil {
								t.Error(err)
								return
							}
							time.Sleep(30 * time.Millisecond) // to the server
							h, ok := srv.answer()
							time.Sleep(30 * time.Millisecond) // its header back
							if !ok {
								tk.Done(Answer{Limited: true, Header: h})
								continue
							}
							tk.Heard(h)
							time.Sleep(400 * time.Millisecond) // the answer streams
							tk.Done(Answer{Header: h})
							return
						}
						t.Error("a request was refused 11 times")
					})
				}
				wg.Wait()
				after := 0
				for _, at := range srv.refused {
					if at >= srv.window {
						after++
					}
				}
				took := time.Since(srv.start)
				t.Logf("refused at %v", srv.refused)
				t.Logf("%d requests sent for 39, %d refused (%d after the first window), in %v", srv.sent, len(srv.refused), after, took)
				if after*100 >= 5*39 {
					t.Errorf("%d of 39 refused after the first window, want < 5%%", after)
				}
				// 39 at 5 per 5 s cannot take less than 35 s; the limiter
				// should not take much longer either.
				if took > 60*time.Second {
					t.Errorf("39 requests took %v at 5 per 5 s, want about 35–45 s", took)
				}
			})
		})
	}
}
