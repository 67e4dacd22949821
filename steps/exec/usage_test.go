package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
)

// billed.stderr is what a program wrapping a model API reports: each
// call's usage under its message id, repeated as the call streams, the
// last report of an id being its final figure. Billed: 550 + 582.
func TestUsageOnceACall(t *testing.T) {
	t.Parallel()
	stderr, err := os.ReadFile(filepath.Join("testdata", "billed.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	u, diags := readUsage(string(stderr), true)
	if u.Tokens() != 1132 || *u.Input != 250 || *u.CacheRead != 820 || *u.CacheWrite != 20 || *u.Output != 42 ||
		u.Cost == nil || *u.Cost < 0.0299 || *u.Cost > 0.0301 || u.Partial || *u.Turns != 1 || len(diags) > 0 {
		t.Errorf("usage = %s (%d tokens), %q, want the 1132 billed", show(u), u.Tokens(), diags)
	}
	// A program stopped before it ended: what it had reported, partial.
	u, _ = readUsage(string(stderr), false)
	if u.Tokens() != 1132 || !u.Partial {
		t.Errorf("stopped: usage = %s, want 1132 tokens, partial", show(u))
	}
}

// The reports reach the budget watch while the program runs: a program
// that reports usage and then hangs is stopped on it, with its usage.
func TestUsageIsLive(t *testing.T) {
	t.Parallel()
	tn := turn(t, `echo 'FLOW_USAGE {"id":"a","input":500,"output":10}' >&2; sleep 30; echo late`)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	errStop := errors.New("over budget")
	tn.Progress = func(p engine.Progress) {
		if p.Tokens >= 510 {
			stop(errStop)
		}
	}
	start := time.Now()
	res, err := New(Options{Grace: time.Second}).Turn(ctx, tn)
	if !errors.Is(err, errStop) || res == nil || res.Status != engine.Aborted {
		t.Fatalf("Turn = %+v, %v; want aborted by the watch", res, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the watch stopped the program only after %v", time.Since(start))
	}
	if res.Usage.Tokens() != 510 || !res.Usage.Partial || strings.Contains(res.Stderr, "late") {
		t.Errorf("usage = %s, want 510 tokens, partial", show(res.Usage))
	}
}

// A report below zero (FLOW_USAGE {"input":-5000}) or not a whole number
// is not counted: the turn's usage is unknown, with a diagnostic.
func TestUsageHostileReports(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		`FLOW_USAGE {"input":-5000}`,
		`FLOW_USAGE {"id":"x","output":-1}`,
		`FLOW_USAGE {"input":1.5}`,
		`FLOW_USAGE {"input":1e30}`,
		`FLOW_USAGE {"cost":-2}`,
		`FLOW_USAGE {"turns":-3}`,
	} {
		u, diags := readUsage(`FLOW_USAGE {"id":"ok","input":100}`+"\n"+line+"\n", true)
		if !u.Unknown || u.Tokens() != 100 || len(diags) != 1 || !strings.Contains(diags[0], "unknown") {
			t.Errorf("%s: usage %s unknown=%v, %q; want unknown, the valid 100 tokens, a diagnostic", line, show(u), u.Unknown, diags)
		}
	}
}
