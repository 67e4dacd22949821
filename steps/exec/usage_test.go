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

// A stderr line of any length without a newline is not held whole to
// look for a report in it: the reader holds at most maxUsageLine bytes of
// a line, and the reports before and after a 50 MB line are still read.
// On main a 200 MB stderr line took flow's memory past 700 MB.
func TestUsageReaderIsBounded(t *testing.T) {
	t.Parallel()
	var got []string
	u := &usageLines{each: func(l []byte) { got = append(got, string(l)) }}
	_, _ = u.Write([]byte("FLOW_USAGE {\"input\":1}\nhal"))
	chunk := []byte(strings.Repeat("e", 32<<10))
	most := 0
	for range (50 << 20) / len(chunk) {
		_, _ = u.Write(chunk)
		most = max(most, cap(u.buf))
	}
	_, _ = u.Write([]byte("\nFLOW_USAGE {\"input\":2}\n"))
	_, _ = u.Write([]byte("FLOW_USAGE {\"input\":3}"))
	u.Flush()
	if most > 2*maxUsageLine {
		t.Errorf("the reader held %d bytes of one line, want at most about %d", most, maxUsageLine)
	}
	want := []string{"FLOW_USAGE {\"input\":1}\n", "FLOW_USAGE {\"input\":2}\n", "FLOW_USAGE {\"input\":3}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q, want %q", got, want)
	}
	// A line just under the bound is read, split anywhere.
	got = nil
	long := "FLOW_USAGE " + strings.Repeat(" ", maxUsageLine-40) + "{\"input\":4}\n"
	for i := 0; i < len(long); i += 1000 {
		_, _ = u.Write([]byte(long[i:min(i+1000, len(long))]))
	}
	if len(got) != 1 || got[0] != long {
		t.Errorf("a line of %d bytes was not read whole", len(long))
	}
}
