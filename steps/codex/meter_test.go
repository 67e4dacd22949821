package codex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// On the real Codex: a turn whose budget affords its first request only
// has its second refused by the meter, before it reaches the server; the
// turn fails ErrBudget and records what the server billed.
func TestCodexMeterRefusesOverBudget(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "exec_command", Arguments: `{"cmd":"ls"}`}, Input: 2000, Output: 20},
		modelserver.Reply{Text: "There is hello.txt.", Input: 2100, Output: 8},
	)
	tn := turn(t, s)
	var live []int64
	tn.Affords = func(spent, next int64) bool {
		live = append(live, spent)
		return spent+next <= 3000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := New(Options{Binary: bin, CodexHome: t.TempDir()}).Turn(ctx, tn)
	if !errors.Is(err, engine.ErrBudget) || res == nil || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want a failed turn and ErrBudget", res, err)
	}
	if n := len(s.Bills()); n != 1 {
		t.Errorf("the server billed %d requests, want 1", n)
	}
	if got := res.Usage.Tokens(); got != s.Billed() || got != 2020 {
		t.Errorf("the turn recorded %d tokens, the server billed %d", got, s.Billed())
	}
	if fmt.Sprint(live) != "[0 2020]" {
		t.Errorf("affords was asked with %v spent, want [0 2020]", live)
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "was not sent") {
		t.Errorf("diagnostics %q do not say a request was refused", res.Diagnostics)
	}
	clitest.NoKey(t, tn.Home, fakeKey)
}
