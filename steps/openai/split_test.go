package openai

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/internal/secret"
)

// splitKey is a key with a quote and a backslash, which JSON escapes.
const splitKey = `sk-"Zq8vW2\xKp9LmN4rT7yB1`

// pieces cuts s at random places, into pieces of 1 to most bytes.
func pieces(rng *rand.Rand, s string, most int) []string {
	var out []string
	for len(s) > 0 {
		n := min(1+rng.IntN(most), len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// TestHostileKeySplitOverChunks: a server that streams the key back in
// 1-byte chunks, then in random splits, then echoes it in a JSON error:
// no file of the home holds the key, escaped or not, nor do the chunks
// kept in the transcript give it back when joined. On main the transcript
// kept every chunk as it came.
func TestHostileKeySplitOverChunks(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	answer := "Your key is " + splitKey + ", and once more: " + splitKey + "."
	one := strings.Split(answer, "")
	rng := rand.New(rand.NewPCG(7, 23))
	replies := []modelserver.Reply{{Chunks: one}}
	for range 6 {
		replies = append(replies, modelserver.Reply{Chunks: pieces(rng, answer, 7)})
	}
	replies = append(replies, modelserver.Reply{Status: 401, Message: "invalid key " + splitKey})
	s := modelserver.Start(t, replies...)
	tn := turn(t, s)
	tn.Secrets = secret.New(splitKey)
	for i := range replies {
		res, err := New(Options{}).Turn(context.Background(), tn)
		if err != nil && i < len(replies)-1 {
			t.Fatalf("turn %d: %v", i, err)
		}
		if i < len(replies)-1 && res.Output != answer {
			t.Errorf("turn %d: the answer is %q, want it whole (the engine redacts it)", i, res.Output)
		}
		tn.Session = ""
	}
	escaped, _ := json.Marshal(splitKey)
	twice, _ := json.Marshal(string(escaped))
	for _, form := range []string{splitKey, string(escaped[1 : len(escaped)-1]), string(twice[3 : len(twice)-3])} {
		if n := clitest.NoJoinedKey(t, tn.Home, form); n < 3 {
			t.Errorf("the home holds %d files", n)
		}
	}
}
