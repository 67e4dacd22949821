package openai

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/internal/ratelimit"
)

// 39 turns at concurrency 10 against a server that takes 5 requests in any
// 5 s (a sliding window, its remaining count and reset on every answer):
// after the first window, fewer than 5% of the requests are refused — the
// driver's limiter sends nothing before a reset the server stated with
// none left. Both meanings of the reset are tried: when one more request
// is admitted, and when the window is back to its initial state. The
// count of refusals does not depend on how fast the machine is; the time
// is only logged.
func TestSlidingWindowServer(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		name := "reset-next"
		if full {
			name = "reset-full"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t, modelserver.Reply{Text: "ok", ChunkDelay: 20 * time.Millisecond})
			s.SetLimit(modelserver.Limit{Requests: 5, Window: 5 * time.Second, Sliding: true, ResetFull: full})
			d := New(Options{Limits: &ratelimit.Registry{}})
			slots := make(chan struct{}, 10)
			var wg sync.WaitGroup
			start := time.Now()
			for range 39 {
				wg.Go(func() {
					slots <- struct{}{}
					defer func() { <-slots }()
					res, err := d.Turn(context.Background(), turn(t, s))
					if err != nil || res.Status != engine.Completed {
						t.Errorf("Turn = %+v, %v; want completed", res, err)
					}
				})
			}
			wg.Wait()
			log := s.LimitLog()
			refused, after := 0, 0
			for _, e := range log {
				if e.Refused {
					refused++
					if e.At >= 5*time.Second {
						after++
					}
				}
			}
			t.Logf("%s: %d requests for 39 turns, %d refused, %d after the first window, in %v", name, len(log), refused, after, time.Since(start))
			if after*100 >= 5*39 {
				t.Errorf("%d of 39 refused after the first window, want < 5%%", after)
			}
		})
	}
}
