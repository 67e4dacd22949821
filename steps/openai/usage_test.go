package openai

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/transcript"
)

// billed.sse is a stream from a server that reports usage in every chunk
// (vLLM's continuous usage stats), under the completion's one id, and a
// prompt of 900 tokens, 600 of them cached: billed 903 tokens. Each chunk
// replaces the last figure, and the cached tokens count once.
func TestUsageOnceACompletion(t *testing.T) {
	t.Parallel()
	stream, err := os.ReadFile(filepath.Join("testdata", "billed.sse"))
	if err != nil {
		t.Fatal(err)
	}
	feed := func(stream []byte) (*parser, int64) {
		log, err := transcript.Open(t.TempDir(), "a", transcript.Header{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer log.Close()
		var live int64
		p := newParser(func(pr engine.Progress) { live = max(live, pr.Tokens) })
		p.ledger.Open()
		if err := p.stream(bytes.NewReader(stream), log); err != nil {
			t.Fatal(err)
		}
		return p, live
	}
	p, live := feed(stream)
	u := p.ledger.Usage()
	if u.Tokens() != 903 || *u.Input != 300 || *u.CacheRead != 600 || *u.Output != 3 || u.Partial || live != 903 {
		t.Errorf("usage = %+v (%d tokens, live %d), want the 903 billed", u, u.Tokens(), live)
	}

	// Cut before [DONE] and the last usage: what the stream had reported,
	// marked partial.
	cut := stream[:strings.Index(string(stream), `"choices":[]`)]
	cut = cut[:bytes.LastIndexByte(cut, '\n')+1]
	p, _ = feed(cut)
	if u := p.ledger.Usage(); u.Tokens() != 903 || !u.Partial {
		t.Errorf("cut: usage = %+v (%d tokens), want 903, partial", u, u.Tokens())
	}
}
