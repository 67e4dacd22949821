package pi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// pi speaks the other APIs too, and normalises each to input without the
// cache: the Responses API counts cached tokens inside input_tokens, the
// Messages API apart from them (and reports cache writes).
func TestE2EUsageAsBilledOnEveryAPI(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"openai-responses", "anthropic-messages"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			bin := clitest.Binary(t, "pi")
			s := modelserver.Start(t,
				modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "ls", Arguments: `{"path":"."}`}, CacheRead: -1, CacheWrite: 30},
				modelserver.Reply{Text: "I saw marker.txt.", CacheRead: -1, CacheWrite: 30})
			base := s.URL() + "/v1"
			if api == "anthropic-messages" {
				base = s.URL()
			}
			d := New(Options{Binary: bin, BaseURL: base, API: api, APIKeyEnv: "FLOW_TEST_PI_KEY",
				Env: []string{"FLOW_TEST_PI_KEY=" + fakeKey}, Grace: time.Second})
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
			clitest.Billed(t, res, s.Billed(), &progress)
		})
	}
}
