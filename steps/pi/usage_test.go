package pi

import (
	"bytes"
	"testing"

	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/steps/agentcli"
)

// billed.jsonl, recorded by TestE2EUsageAsBilled, is a tool-using turn of
// two requests the server billed 2,498 tokens for, half of each prompt
// read from the cache. pi repeats each response's id and usage in its
// message_update, message_end and turn_end events.
func TestUsageOnceAResponse(t *testing.T) {
	t.Parallel()
	stream := clitest.Fixture(t, "billed.jsonl")
	const billed = 2498

	var progress clitest.Progress
	p := newParser(progress.Record, nil)
	w := agentcli.NewLineWriter(p.Feed)
	_, _ = w.Write(stream)
	w.Flush()
	o := p.Outcome()
	if o.Usage.Tokens() != billed || o.Usage.Partial || *o.Usage.Input != 609+636 || *o.Usage.CacheRead != 609+635 {
		t.Errorf("usage = %+v (%d tokens), want the %d billed", o.Usage, o.Usage.Tokens(), billed)
	}
	if live := progress.MostTokens(); live != billed {
		t.Errorf("the live count reached %d, want %d", live, billed)
	}

	// Cut before agent_end (a stopped or killed turn): what the stream had
	// reported, marked partial.
	cut := stream[:bytes.LastIndex(bytes.TrimRight(stream, "\n"), []byte("\n"))+1]
	o = parse(t, cut)
	if o.Usage.Tokens() != billed || !o.Usage.Partial {
		t.Errorf("cut: usage = %+v (%d tokens), want %d, partial", o.Usage, o.Usage.Tokens(), billed)
	}
	// Cut inside the second request: its usage never came.
	first := stream[:bytes.Index(stream, []byte(`"responseId":"chatcmpl-2"`))]
	first = first[:bytes.LastIndexByte(first, '\n')+1]
	o = parse(t, first)
	if o.Usage.Tokens() != 609+5+609 || !o.Usage.Partial {
		t.Errorf("cut in the second request: usage = %+v (%d tokens), want the first's 1223, partial", o.Usage, o.Usage.Tokens())
	}
}
