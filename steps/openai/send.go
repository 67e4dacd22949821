package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/steps/transcript"
)

// DefaultRateRetries is how many times a turn sends its request again after
// the server refused it for now (429, overload), each time when the
// limiter says, before the turn ends `rate_limit`.
const DefaultRateRetries = 10

// sendArgs is what one turn's request needs.
type sendArgs struct {
	endpoint, key, model string
	body                 []byte
	log                  *transcript.Log
	res                  *engine.TurnResult
	status               *int // when set, gets the HTTP status of a refusal
}

// send sends the turn's request through the limiter of its provider key
// (internal/ratelimit.Default), again after each refusal for now, up to
// RateRetries times. It returns the 200 answer with the limiter's ticket,
// which the caller settles once it has read the answer; or no answer, with
// res failed and the error to return: one wrapping rundir.ErrRateLimit, an
// rundir.QuotaError, or nil for another failure.
func (d *Driver) send(ctx context.Context, t *engine.Turn, a sendArgs) (*http.Response, *ratelimit.Ticket, error) {
	key := ratelimit.Key{Driver: "openai", BaseURL: strings.TrimSuffix(a.endpoint, "/chat/completions"), Key: ratelimit.Fingerprint(a.key), Model: a.model}
	lim := d.opts.Limits.For(key)
	fail := func(diag string, err error) (*http.Response, *ratelimit.Ticket, error) {
		a.res.Status = engine.Failed
		a.res.Diagnostics = append(a.res.Diagnostics, diag)
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		tk, err := lim.Acquire(ctx, func(w time.Duration) {
			t.Progress(engine.Progress{Activity: ratelimit.Waiting(w, key)})
		})
		if q := (*ratelimit.QuotaError)(nil); errors.As(err, &q) {
			return fail("the server's quota is gone: "+q.Message, &record.QuotaError{Message: q.Message})
		}
		if w := (*ratelimit.WaitError)(nil); errors.As(err, &w) {
			return fail("not sent: "+w.Error(), fmt.Errorf("%w: %w", w, record.ErrRateLimit))
		}
		if err != nil {
			return nil, nil, err // ctx ended
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, bytes.NewReader(a.body))
		if err != nil {
			tk.Done(ratelimit.Answer{})
			return fail(fmt.Sprintf("building the request to %s: %v", a.endpoint, err), nil)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		if a.key != "" {
			req.Header.Set("Authorization", "Bearer "+a.key)
		}
		resp, err := d.opts.HTTPClient.Do(req)
		if err != nil {
			tk.Done(ratelimit.Answer{})
			if ctx.Err() != nil {
				return nil, nil, context.Cause(ctx)
			}
			return fail(fmt.Sprintf("sending the request to %s: %v", a.endpoint, redactErr(err, a.key)), nil)
		}
		if resp.StatusCode == http.StatusOK {
			tk.Heard(resp.Header) // what it says of the limits holds from now, not once the answer is read
			return resp, tk, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if a.status != nil {
			*a.status = resp.StatusCode
		}
		a.log.Record(map[string]any{"response": map[string]any{"status": resp.StatusCode, "body": string(b)}})
		diag := httpError(resp, b)
		ans := ratelimit.Classify(resp.StatusCode, b, serverMessage(b))
		ans.Header = resp.Header
		tk.Done(ans)
		a.res.Stderr = string(b)
		switch {
		case ans.Quota != "":
			return fail(diag, &record.QuotaError{Message: ans.Quota})
		case ans.Limited && attempt < d.opts.RateRetries:
			a.res.Diagnostics = append(a.res.Diagnostics, diag+"; sent again when the limiter allows")
			continue
		case ans.Limited:
			return fail(diag, fmt.Errorf("%s, %d times: %w", diag, attempt+1, record.ErrRateLimit))
		}
		return fail(diag, nil)
	}
}
