package claude

import (
	"bytes"
	"testing"

	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/steps/agentcli"
)

// billed.jsonl, recorded by TestE2EUsageAsBilled, is a tool-using turn the
// server billed 5,635 tokens for, cache reads and writes included. Its
// first message has two content blocks, so two assistant events with the
// same id and usage; the assistant events carry each message's starting
// usage (1 output token), the result event the turn's final figure.
func TestUsageOnceAMessage(t *testing.T) {
	t.Parallel()
	stream := clitest.Fixture(t, "billed.jsonl")
	const billed, started = 5635, (1347 + 1 + 1387 + 40) + (1383 + 1 + 1422 + 40)

	var progress clitest.Progress
	p := newParser(progress.Record, nil)
	w := agentcli.NewLineWriter(p.Feed)
	_, _ = w.Write(stream)
	w.Flush()
	o := p.Outcome()
	if o.Usage.Tokens() != billed || o.Usage.Partial || *o.Usage.Input != 2730 || *o.Usage.CacheRead != 2809 || *o.Usage.CacheWrite != 80 {
		t.Errorf("usage = %+v (%d tokens), want the %d billed", o.Usage, o.Usage.Tokens(), billed)
	}
	if live := progress.MostTokens(); live != started {
		t.Errorf("the live count reached %d, want each message counted once: %d", live, started)
	}

	// Cut before the result (a stopped or killed turn): what the stream
	// had reported, marked partial.
	cut := stream[:bytes.LastIndex(bytes.TrimRight(stream, "\n"), []byte("\n"))+1]
	o = parse(t, cut)
	if o.Usage.Tokens() != started || !o.Usage.Partial || o.Usage.Turns == nil || *o.Usage.Turns != 2 {
		t.Errorf("cut: usage = %+v (%d tokens), want %d, partial, 2 turns", o.Usage, o.Usage.Tokens(), started)
	}
}
