package transcript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
)

func TestLog(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "not", "yet")
	for i, answer := range []string{"first <b>bold</b>", "second"} {
		l, err := Open(home, "coder", Header{Visit: "loop#1/code", Driver: "openai", Model: "m", Started: time.Now(),
			Prompt: "do <it> with sk-secret"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Redact("sk-secret", "")
		l.Raw([]byte(`{"type":"delta","text":"hi sk-secret"}` + "\n"))
		l.Raw([]byte("not json"))
		l.Raw([]byte("  \n"))
		in := int64(10 * (i + 1))
		err = l.End(&engine.TurnResult{Status: engine.Completed, Output: answer, Usage: record.Usage{Input: &in}},
			[]Step{{Kind: "tool", Title: "bash", Text: "ls </script>"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	// Every line is JSON; the secret is gone; each turn has a header.
	f, err := os.Open(filepath.Join(home, "coder.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines, headers := 0, 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Errorf("line %d is not JSON: %s", lines, sc.Text())
		}
		if strings.Contains(sc.Text(), "sk-secret") {
			t.Errorf("line %d holds the secret", lines)
		}
		if strings.HasPrefix(sc.Text(), `{"flow_turn_start":{"visit":"loop#1/code"`) {
			headers++
		}
	}
	if lines != 8 || headers != 2 {
		t.Errorf("%d lines with %d headers, want 8 with 2", lines, headers)
	}
	turns, err := Turns(filepath.Join(home, "coder.jsonl"))
	if err != nil || len(turns) != 2 || turns[1].Answer != "second" || *turns[0].Usage.Input != 10 || turns[0].Visit != "loop#1/code" {
		t.Fatalf("Turns = %+v, %v", turns, err)
	}
	html, err := os.ReadFile(filepath.Join(home, "coder.html"))
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

func TestNilLog(t *testing.T) {
	t.Parallel()
	var l *Log
	l.Redact("x")
	l.Raw([]byte("{}"))
	l.Record(map[string]int{"a": 1})
	if err := l.End(&engine.TurnResult{}, nil); err != nil || l.Close() != nil || l.Path() != "" || l.HTMLPath() != "" {
		t.Errorf("a nil Log did something: %v", err)
	}
}

func TestFileName(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for agent, want := range map[string]string{"scout": "scout.jsonl", "../up": ".._up.jsonl", "..": "agent.jsonl", "": "agent.jsonl"} {
		l, err := Open(home, agent, Header{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Path(); got != filepath.Join(home, want) {
			t.Errorf("Open(%q).Path() = %s, want %s", agent, got, want)
		}
		_ = l.Close()
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	var tl Tail
	_, _ = tl.Write([]byte("short\n"))
	if tl.String() != "short\n" {
		t.Fatalf("Tail = %q", tl.String())
	}
	line := strings.Repeat("é", 50) + "\n"
	total := 6
	for range 20000 {
		_, _ = tl.Write([]byte(line))
		total += len(line)
	}
	_, _ = tl.Write([]byte(strings.Repeat("x", StderrLimit+10)))
	_, _ = tl.Write([]byte("last line\n"))
	total += StderrLimit + 10 + 10
	s := tl.String()
	if len(s) > StderrLimit+100 || !strings.HasSuffix(s, "x\nlast line\n") && !strings.HasSuffix(s, "xlast line\n") {
		t.Fatalf("Tail keeps %d bytes ending %q", len(s), s[max(len(s)-20, 0):])
	}
	head, kept, _ := strings.Cut(s, "\n")
	if want := fmt.Sprintf("[the first %d bytes of stderr were left out]", total-len(kept)); head != want {
		t.Errorf("Tail starts %q, want %q", head, want)
	}
}

// TestFlowWordsKnowTranscriptKeys: the keys a transcript writes of
// secret.MinLen bytes or more are words secret never takes for a secret.
func TestFlowWordsKnowTranscriptKeys(t *testing.T) {
	t.Parallel()
	keys := []string{"flow_turn_start", "flow_turn", "flow_raw_cut", "after_bytes", "raw"}
	for _, v := range []any{Header{}, Turn{}, Step{}, record.Usage{}} {
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
			keys = append(keys, name)
		}
	}
	for _, k := range keys {
		if len(k) >= secret.MinLen && !secret.FlowWord(k) {
			t.Errorf("the transcript writes the key %q, which secret.FlowWord does not know", k)
		}
	}
}
