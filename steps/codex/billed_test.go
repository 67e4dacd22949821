package codex

import (
	"context"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// A tool-using turn records what the server billed: Codex counts the
// cached tokens inside input_tokens and again as cached_input_tokens, and
// they are counted once. The next turn of the thread records its own
// requests only.
func TestCodexUsageAsBilled(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "exec_command", Arguments: `{"cmd":"ls"}`}, CacheRead: -1},
		modelserver.Reply{Text: "There is one file: hello.txt.", CacheRead: -1},
		modelserver.Reply{Text: "Still one file.", CacheRead: -1},
	)
	tn := turn(t, s)
	var progress clitest.Progress
	tn.Progress = progress.Record
	d := New(Options{Binary: bin, CodexHome: t.TempDir()})
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	clitest.Record(t, res, "billed.jsonl")
	clitest.Billed(t, res, s.Billed(), &progress)

	before := s.Billed()
	next := *tn
	next.Session, next.Prompt = res.Session, "And now?"
	var again clitest.Progress
	next.Progress = again.Record
	res, err = d.Turn(context.Background(), &next)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("second Turn = %+v, %v", res, err)
	}
	clitest.Billed(t, res, s.Billed()-before, &again)
}
