package secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// sseChunk is a chat completions chunk carrying text as its delta.
func sseChunk(text string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}})
	return b
}

// joinedDeltas returns the text the written chunks carry, joined.
func joinedDeltas(t *testing.T, lines [][]byte) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatalf("a written line is not JSON: %s", l)
		}
		for _, ch := range c.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
	return b.String()
}

// noFragment fails if text holds HoldFrom or more bytes of key in a row.
func noFragment(t *testing.T, what, text, key string) {
	t.Helper()
	for i := 0; i+HoldFrom <= len(key); i++ {
		if frag := key[i : i+HoldFrom]; strings.Contains(text, frag) {
			t.Errorf("%s holds %q of the key: %q", what, frag, text)
			return
		}
	}
}

// split cuts s into pieces at random places (every piece 1 byte with n 0).
func split(rng *rand.Rand, s string, most int) []string {
	var out []string
	for len(s) > 0 {
		n := 1
		if most > 1 {
			n = 1 + rng.IntN(most)
		}
		n = min(n, len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// TestLinesKeySplitOverChunks: a key inside a streamed answer, split over
// 1-byte chunks and over random splits, never reaches the written lines
// whole, nor do the joined deltas give it back; the rest of the answer is
// there, and lines without a secret pass byte for byte.
func TestLinesKeySplitOverChunks(t *testing.T) {
	t.Parallel()
	const k = "sk-Zq8vW2xKp9LmN4rT7yB1"
	answer := "Here it is: " + k + " and again " + k + ". Done, no more."
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		most := round % 20 // 0 and 1: one byte a chunk
		var out [][]byte
		l := New(k).Lines(func(b []byte) { out = append(out, b) })
		plain := []byte(`{"type":"ping","at":"sk-Zq8 is not a key"}`)
		l.Line(plain)
		for _, piece := range split(rng, answer, most) {
			l.Line(sseChunk(piece))
		}
		l.Line([]byte(`{"type":"done"}`))
		l.Flush()
		if string(out[0]) != string(plain) {
			t.Fatalf("a line without a secret changed: %s", out[0])
		}
		joined := joinedDeltas(t, out)
		noFragment(t, fmt.Sprintf("round %d: the joined deltas", round), joined, k)
		for _, line := range out[1:] {
			noFragment(t, "a written line", string(line), k)
		}
		if !strings.HasPrefix(joined, "Here it is: ") || !strings.HasSuffix(joined, ". Done, no more.") ||
			!strings.Contains(joined, Mask) {
			t.Fatalf("round %d: the joined deltas %q lost the text around the key", round, joined)
		}
	}
}

// TestLinesSnapshots: a CLI that repeats the whole message so far in each
// line (pi's partial) never shows the start of the key at a line's end.
func TestLinesSnapshots(t *testing.T) {
	t.Parallel()
	const k = "sk-Zq8vW2xKp9LmN4rT7yB1"
	answer := "your key is " + k + " ok"
	var out [][]byte
	l := New(k).Lines(func(b []byte) { out = append(out, b) })
	for n := 1; n <= len(answer); n++ {
		b, _ := json.Marshal(map[string]any{"type": "message_update", "partial": map[string]any{"content": []any{
			map[string]any{"type": "text", "text": answer[:n]}}}})
		l.Line(b)
	}
	l.Flush()
	if len(out) != len(answer) {
		t.Fatalf("%d lines written of %d", len(out), len(answer))
	}
	for _, line := range out {
		noFragment(t, "a snapshot", string(line), k)
	}
}

// TestLinesStructure: keys are never changed, and a secret's start at the
// end of a field that does not go on is masked once the stream ends.
func TestLinesStructure(t *testing.T) {
	t.Parallel()
	const k = "content_secret_value"
	var out []string
	l := New(k).Lines(func(b []byte) { out = append(out, string(b)) })
	l.Line([]byte(`{"x content_se":{"content_se":"text"}}`))
	if len(out) != 1 {
		t.Fatalf("a key that ends like the secret begins held its line: %q", out)
	}
	l.Line([]byte(`{"content_secret_value":1,"a":"x content_se"}`))
	l.Line([]byte(`not json`))
	if len(out) != 1 {
		t.Fatalf("the line ending in the key's start was written before its field went on: %q", out)
	}
	l.Flush()
	// A key that is the secret is redacted as any text is.
	want := []string{`{"x content_se":{"content_se":"text"}}`, `{"[redacted]":1,"a":"x [redacted]"}`, `not json`}
	if strings.Join(out, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestEncodings: every spelling of a secret the redactor knows is
// redacted.
func TestEncodings(t *testing.T) {
	t.Parallel()
	const s = `p@ss"w\rd/<key>&?=1+2 é`
	r := New(s)
	once := strings.TrimSuffix(strings.TrimPrefix(mustJSON(s), `"`), `"`)
	twice := strings.TrimSuffix(strings.TrimPrefix(mustJSON(once), `"`), `"`)
	for name, text := range map[string]string{
		"raw":                        "x " + s + " y",
		"JSON":                       `{"error":` + mustJSON(s) + `}`,
		"JSON without HTML escaping": `{"error":"p@ss\"w\\rd/<key>&?=1+2 é"}`,
		"JSON twice":                 `{"body":"{\"error\":\"` + twice + `\"}"}`,
		"query":                      "https://h/v1?key=" + url.QueryEscape(s) + "&x=1",
		"HTML":                       "<pre>" + html.EscapeString(s) + "</pre>",
		"html/template":              "<pre>" + template.HTMLEscapeString(s) + "</pre>",
		"path":                       "https://h/" + url.PathEscape(s) + "/v1",
		"lower-case hex":             "https://h/v1?key=" + strings.ToLower(url.QueryEscape(s)),
		"base64":                     base64.StdEncoding.EncodeToString([]byte(s)),
		"base64 url":                 base64.URLEncoding.EncodeToString([]byte(s)),
		"base64 shifted by 1":        base64.StdEncoding.EncodeToString([]byte("a" + s + "b")),
		"base64 shifted by 2":        base64.StdEncoding.EncodeToString([]byte("ab" + s + "c")),
		"base64 url shifted by 1":    base64.RawURLEncoding.EncodeToString([]byte("Authorization: " + s)),
		"basic auth":                 "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+s)),
	} {
		got := r.String(text)
		if !strings.Contains(got, Mask) {
			t.Errorf("%s: %q is not redacted", name, text)
		}
		for _, f := range []string{s, once, twice, url.QueryEscape(s)} {
			if strings.Contains(got, f) {
				t.Errorf("%s: %q still holds %q", name, got, f)
			}
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestUnsafe: a value too short or a word flow writes is not a secret.
func TestUnsafe(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{"output": false, "status": false, "passed": false, "1234567": false,
		"completed": false, "Description": false, "transcript": false, "sk-12345678": true, "hunter22hunter": true} {
		if got := Unsafe(v) == ""; got != ok {
			t.Errorf("Unsafe(%q) = %q", v, Unsafe(v))
		}
		if !New(v).Empty() != ok {
			t.Errorf("New(%q) redacts: %v, want %v", v, !New(v).Empty(), ok)
		}
	}
}

// FuzzLines: whatever the secret, the text and the splits, every line
// written is JSON, lines come out in order, and neither a line nor the
// joined deltas hold the secret.
func FuzzLines(f *testing.F) {
	f.Add("sk-Zq8vW2xKp9LmN4", "a sk-Zq8vW2xKp9LmN4 b sk-Zq8v", uint64(1))
	f.Add("aaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaa", uint64(7))
	f.Add(`q"\/<>&%+=é`, `x q"\/<>&%+=é y`, uint64(3))
	f.Fuzz(func(t *testing.T, secret, text string, seed uint64) {
		r := New(secret)
		if r.Empty() || strings.ContainsAny(secret, "[]") || strings.Contains(Mask, secret) {
			return
		}
		rng := rand.New(rand.NewPCG(seed, seed>>3))
		var out [][]byte
		l := r.Lines(func(b []byte) { out = append(out, b) })
		n := 0
		for _, piece := range split(rng, text, 1+int(seed%9)) {
			l.Line(sseChunk(piece))
			n++
			if rng.IntN(4) == 0 {
				l.Line([]byte(`{"type":"ping"}`))
				n++
			}
		}
		l.Flush()
		if len(out) != n {
			t.Fatalf("%d lines written of %d", len(out), n)
		}
		for _, line := range out {
			if !json.Valid(line) {
				t.Fatalf("not JSON: %q", line)
			}
		}
		if joined := joinedDeltas(t, out); strings.Contains(joined, secret) {
			t.Errorf("the joined deltas %q hold the secret %q", joined, secret)
		}
	})
}

// FuzzJSON: a JSON text redacted stays JSON, and none of its strings holds
// the secret once the text is as an encoder writes it (a string spelt with
// needless escapes, \u0073 for s, is Lines' to read decoded).
func FuzzJSON(f *testing.F) {
	f.Add("sk-Zq8vW2xK", `{"a":"x sk-Zq8vW2xK","sk-Zq8vW2xK":[1,"\u0073k-Zq8vW2xK"]}`)
	f.Add("00000000", `["\u00000000000"]`)
	f.Add(`q"\/<>&%+=`, `{"e":"q\"\\/\u003c\u003e\u0026%+="}`)
	f.Fuzz(func(t *testing.T, secret, text string) {
		r := New(secret)
		if r.Empty() || !json.Valid([]byte(text)) || strings.ContainsAny(secret, "[]") || strings.Contains(Mask, secret) {
			return
		}
		if out := r.JSON([]byte(text)); !json.Valid(out) {
			t.Fatalf("JSON(%q) = %q, not JSON", text, out)
		}
		var in any
		_ = json.Unmarshal([]byte(text), &in)
		encoded, _ := json.Marshal(in)
		out := r.JSON(encoded)
		if !json.Valid(out) {
			t.Fatalf("JSON(%q) = %q, not JSON", encoded, out)
		}
		var v any
		_ = json.Unmarshal(out, &v)
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				if strings.Contains(v, secret) && !FlowWord(v) {
					t.Errorf("JSON(%q) = %q: a string holds the secret", text, out)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for k, e := range v {
					walk(k)
					walk(e)
				}
			}
		}
		walk(v)
	})
}
