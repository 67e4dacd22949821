package codex

import (
	"bytes"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/steps/agentcli"
)

// billed.jsonl, recorded by TestCodexUsageAsBilled, is a tool-using turn
// of two requests the server billed 20,431 tokens for, half of each
// prompt read from the cache: Codex reports the cached tokens inside
// input_tokens and again as cached_input_tokens.
func TestUsageCachedOnce(t *testing.T) {
	t.Parallel()
	recorded := clitest.Fixture(t, "billed.jsonl")
	const billed = 20431
	feed := func(lines []byte, before threadUsage) (*stream, int64) {
		var live int64
		s := newStream(func(p engine.Progress) { live = max(live, p.Tokens) }, nil)
		s.before = before
		w := agentcli.NewLineWriter(s.line)
		_, _ = w.Write(lines)
		w.Flush()
		return s, live
	}
	s, live := feed(recorded, threadUsage{})
	u := s.ledger.Usage()
	if u.Tokens() != billed || u.Partial || *u.Input != 10210 || *u.CacheRead != 10209 || live != billed {
		t.Errorf("usage = %+v (%d tokens, live %d), want the %d billed", u, u.Tokens(), live, billed)
	}

	// A later turn of the thread: turn.completed counts the thread's
	// earlier turns too, and the turn records only what it adds.
	s, _ = feed(recorded, threadUsage{Input: ptr[int64](10000), Cached: ptr[int64](5000), Output: ptr[int64](2)})
	if u := s.ledger.Usage(); u.Tokens() != billed-10002 || *u.Input != 10210-5000 {
		t.Errorf("a later turn: usage = %+v (%d tokens), want %d", u, u.Tokens(), billed-10002)
	}

	// Cut before turn.completed: nothing reported, so unknown (null), and
	// partial.
	cut := recorded[:bytes.LastIndex(bytes.TrimRight(recorded, "\n"), []byte("\n"))+1]
	s, _ = feed(cut, threadUsage{})
	if u := s.ledger.Usage(); u.Input != nil || u.Output != nil || !u.Partial {
		t.Errorf("cut: usage = %+v, want null and partial", u)
	}
}
