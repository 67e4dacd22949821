package ratelimit

import (
	"fmt"
	"time"
)

// WaitError is returned by Acquire when the limiter would hold the request
// back for longer than its context has left: the turn ends rate_limit at
// once, saying what the server asked for, instead of sitting out its
// timeout and being recorded as having timed out.
type WaitError struct {
	Key  Key
	Wait time.Duration // the wait the limiter would impose (capped at MaxWait)
	Said string        // the header that asked for it, as the server sent it; "" for flow's own backoff
	Left time.Duration // what the context had left
}

func (e *WaitError) Error() string {
	what := "the limiter backs off after a refusal"
	if e.Said != "" {
		what = "the server asks for a wait (" + e.Said + ")"
	}
	return fmt.Sprintf("%s: %s: %s to wait, longer than the %s the turn has left", e.Key.Provider(), what, round(e.Wait), round(e.Left))
}

// round shows a duration to the millisecond below a minute, to the second
// above.
func round(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
