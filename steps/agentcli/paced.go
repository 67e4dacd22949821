package agentcli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ratelimit"
)

// Paced runs one turn of a CLI through the limiter of its provider key
// (ratelimit.Default; docs/drivers.md). A CLI retries on its own, out of
// flow's sight, so the limiter cannot pace its requests: it paces the
// turns. Before the turn it waits as long as the key's limiter says (with
// progress "waiting 12 s for … (rate limit)"); after a failed turn it
// looks for a refusal in what the CLI said (its diagnostics and stderr,
// never the model's answer): a 429 or an overload ends the turn with an
// error wrapping rundir.ErrRateLimit, and the limiter backs off the next
// turns to that key; a quota ends it with an rundir.QuotaError and every
// later turn to the key at once, without starting the CLI.
func Paced(ctx context.Context, t *engine.Turn, key ratelimit.Key, turn func(context.Context) (*engine.TurnResult, error)) (*engine.TurnResult, error) {
	lim := ratelimit.Default.For(key)
	tk, err := lim.Acquire(ctx, func(d time.Duration) {
		t.Progress(engine.Progress{Activity: ratelimit.Waiting(d, key)})
	})
	if q := (*ratelimit.QuotaError)(nil); errors.As(err, &q) {
		return &engine.TurnResult{Status: engine.Failed, Diagnostics: []string{"not started: the provider's quota is gone: " + q.Message}},
			&record.QuotaError{Message: q.Message}
	}
	if w := (*ratelimit.WaitError)(nil); errors.As(err, &w) {
		return &engine.TurnResult{Status: engine.Failed, Diagnostics: []string{"not started: " + w.Error()}},
			fmt.Errorf("%w: %w", w, record.ErrRateLimit)
	}
	if err != nil {
		return nil, err // ctx ended
	}
	res, err := turn(ctx)
	ans := ratelimit.Answer{}
	var line string
	if res != nil && res.Status == engine.Failed && err == nil {
		var quota bool
		line, quota = ratelimit.Scan(strings.Join(res.Diagnostics, "\n") + "\n" + res.Stderr)
		if quota {
			ans.Quota = line
		}
		ans.Limited = line != ""
	}
	tk.Done(ans)
	switch {
	case ans.Quota != "":
		return res, &record.QuotaError{Message: ans.Quota}
	case ans.Limited:
		return res, fmt.Errorf("%s: %w", line, record.ErrRateLimit)
	}
	return res, err
}
