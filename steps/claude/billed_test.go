package claude

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
