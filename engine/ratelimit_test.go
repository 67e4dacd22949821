package engine_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// A driver's ErrRateLimit ends the visit `rate_limit`, not `provider`; a
// QuotaError does too, with a message a sweep recognises as a quota.
func TestRateLimitAndQuotaKinds(t *testing.T) {
	p := load(t, "limited", `name: limited
`+agents+`nodes:
  - {id: busy, agent: worker, prompt: go, on_fail: continue}
  - {id: broke, agent: worker, prompt: go, on_fail: continue}
`)
	onHosts(t, func(t *testing.T, h host) {
		leaves := &scriptedLeaves{end: map[string]error{
			"busy":  fmt.Errorf("the server answered 429: %w", record.ErrRateLimit),
			"broke": &record.QuotaError{Message: "You exceeded your current quota"},
		}}
		rec := &memoryRecorder{}
		if _, err := Walk(context.Background(), p, Options{RunID: "r1"}, NewHost(Parts{WorkDir: t.TempDir(), Runtime: h.runtime(), Leaves: leaves, Recorder: rec}), nil); err != nil {
			t.Fatal(err)
		}
		got := map[string]*record.Failure{}
		for _, f := range rec.facts {
			if f.Type == "end" {
				got[f.Visit] = f.Error
			}
		}
		if f := got["busy"]; f == nil || f.Kind != schema.FailRateLimit || f.Quota() {
			t.Errorf("busy ended %+v, want rate_limit, not a quota", f)
		}
		if f := got["broke"]; f == nil || f.Kind != schema.FailRateLimit || !f.Quota() || f.Message != "quota exhausted: You exceeded your current quota" {
			t.Errorf("broke ended %+v, want rate_limit saying quota exhausted, with the provider's message", f)
		}
	})
}
