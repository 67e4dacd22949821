package transcript

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
)

func TestLog(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for i, answer := range []string{"first <b>bold</b>", "second"} {
		l, err := Open(home, "coder")
		if err != nil {
			t.Fatal(err)
		}
		l.Redact("sk-secret", "")
		l.Raw([]byte(`{"type":"delta","text":"hi sk-secret"}` + "\n"))
		l.Raw([]byte("not json"))
		l.Raw([]byte("  \n"))
		in := int64(10 * (i + 1))
		err = l.End(Turn{
			Visit: "loop#1/code", Driver: "openai", Model: "m", Started: time.Now(), Status: "completed",
			Prompt: "do <it>", Answer: answer, Usage: engine.Usage{Input: &in},
			Steps: []Step{{Kind: "tool", Title: "bash", Text: "ls </script>"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	// Every line is JSON; the secret is gone.
	f, err := os.Open(home + "/coder.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Errorf("line %d is not JSON: %s", lines, sc.Text())
		}
		if strings.Contains(sc.Text(), "sk-secret") {
			t.Errorf("line %d holds the secret", lines)
		}
	}
	if lines != 6 {
		t.Errorf("%d lines, want 6", lines)
	}
	turns, err := Turns(home + "/coder.jsonl")
	if err != nil || len(turns) != 2 || turns[1].Answer != "second" || *turns[0].Usage.Input != 10 {
		t.Fatalf("Turns = %+v, %v", turns, err)
	}
	html, err := os.ReadFile(home + "/coder.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{"Turn 2", "first &lt;b&gt;bold&lt;/b&gt;", "ls &lt;/script&gt;", "input 10, output not reported, cost not reported"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>bold") || strings.Contains(page, "<script") {
		t.Error("page holds unescaped text")
	}
}
