package pi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// A tool-using turn records what the server billed, cache reads included
// (pi repeats each message's usage and id in turn_end), and its live count
// never counts a message twice.
func TestE2EUsageAsBilled(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "ls", Arguments: `{"path":"."}`}, CacheRead: -1},
		modelserver.Reply{Text: "I saw marker.txt.", CacheRead: -1})
	tn := newTurn(t, "List the files.")
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
