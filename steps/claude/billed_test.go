package claude

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// A tool-using turn whose messages have two content blocks each (Claude
// Code sends one assistant event per block, with the message's usage):
// the turn records what the server billed, cache reads and writes
// included, and its live count never counts a message twice.
func TestE2EUsageAsBilled(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"ls","description":"list files"}`},
			CacheRead: -1, CacheWrite: 40},
		modelserver.Reply{Text: "I saw marker.txt.", CacheRead: -1, CacheWrite: 40})
	tn := newTurn(t, "List the files.")
	tn.Agent.Tools = []string{"read", "bash"}
	if err := os.WriteFile(filepath.Join(tn.WorkDir, "marker.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var progress clitest.Progress
	tn.Progress = progress.Record
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	clitest.Record(t, res, "billed.jsonl")
	clitest.Billed(t, res, s.Billed(), &progress)
}

// A turn stopped while its second request waits for the model records
// what the stream had reported by then — the first message's usage, as
// its events carried it — marked partial, within 5% of what the server
// billed.
func TestE2EStoppedTurnKeepsItsUsage(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"ls","description":"list files"}`},
			CacheRead: -1},
		modelserver.Reply{Text: "never sent", Delay: time.Minute})
	tn := newTurn(t, "List the files.")
	tn.Agent.Tools = []string{"read", "bash"}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	errStop := errors.New("over budget")
	tn.Progress = func(p engine.Progress) {
		if p.Tokens > 0 {
			stop(errStop)
		}
	}
	res, err := d.Turn(ctx, tn)
	if !errors.Is(err, errStop) || res == nil || res.Status != engine.Aborted {
		t.Fatalf("Turn = %+v, %v; want aborted", res, err)
	}
	billed := s.Billed()
	t.Logf("billed %d, recorded %d (%+v)", billed, res.Usage.Tokens(), res.Usage)
	if got := res.Usage.Tokens(); !res.Usage.Partial || billed == 0 || math.Abs(float64(got-billed)) > 0.05*float64(billed) {
		t.Errorf("recorded %d tokens (partial %v), the server billed %d", got, res.Usage.Partial, billed)
	}
}

// A turn stopped while a tool it called runs (as a delegating parent
// waits on its child) records what the server billed for the message
// that called it, its output tokens included: Claude Code's assistant
// events carry a message's usage at its start (one output token), the
// API's message_delta (--include-partial-messages) the rest.
func TestE2EStoppedInAToolCountsItsMessageWhole(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{Text: "Waiting.", ToolCall: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"sleep 30","description":"wait"}`},
			Input: 3000, Output: 40},
		modelserver.Reply{Text: "never sent"})
	tn := newTurn(t, "Wait.")
	tn.Agent.Tools = []string{"bash"}
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	errStop := errors.New("over budget")
	var once sync.Once
	var live atomic.Int64
	tn.Progress = func(p engine.Progress) {
		live.Store(max(live.Load(), p.Tokens))
		if p.Activity == "using Bash" {
			once.Do(func() { time.AfterFunc(2*time.Second, func() { stop(errStop) }) })
		}
	}
	res, err := d.Turn(ctx, tn)
	if !errors.Is(err, errStop) || res == nil || res.Status != engine.Aborted {
		t.Fatalf("Turn = %+v, %v; want aborted", res, err)
	}
	if got, billed := res.Usage.Tokens(), s.Billed(); got != billed || billed != 3040 || live.Load() != billed || !res.Usage.Partial {
		t.Errorf("recorded %d tokens (live %d, partial %v), the server billed %d", got, live.Load(), res.Usage.Partial, billed)
	}
}

// A turn whose budget affords its first request only: the meter refuses
// the second before it reaches the server, and the turn fails ErrBudget
// with what the server billed.
func TestE2EMeterRefusesOverBudget(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"ls","description":"list"}`},
			Input: 2000, Output: 20},
		modelserver.Reply{Text: "never sent", Input: 2100, Output: 8})
	tn := newTurn(t, "List the files.")
	tn.Agent.Tools = []string{"bash"}
	var mu sync.Mutex
	var asked []int64
	tn.Affords = func(spent, next int64) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, spent)
		return spent+next <= 3000
	}
	res, err := d.Turn(context.Background(), tn)
	if !errors.Is(err, engine.ErrBudget) || res == nil || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want a failed turn and ErrBudget", res, err)
	}
	var gen int
	for _, b := range s.Bills() {
		gen++
		t.Logf("billed %s %d", b.ID, b.Tokens())
	}
	if got := res.Usage.Tokens(); gen != 1 || got != s.Billed() || got != 2020 {
		t.Errorf("the turn recorded %d tokens, the server billed %d in %d requests; want 2020 in 1", got, s.Billed(), gen)
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "was not sent") {
		t.Errorf("diagnostics %q do not say a request was refused", res.Diagnostics)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 2 || asked[0] != 0 || asked[len(asked)-1] != 2020 {
		t.Errorf("affords was asked with %v spent", asked)
	}
}
