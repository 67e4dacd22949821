package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clipperhouse/displaywidth"
)

// TestLiveLinesFitTheTerminal redraws a live block whose lines are too wide
// for a 40-column terminal, one of them wide in CJK characters and one
// holding a multi-line command: each must come out as one row that leaves
// the last column free, or clear, which moves up one row per line, would
// leave rows of it behind.
func TestLiveLinesFitTheTerminal(t *testing.T) {
	const cols = 40
	var out bytes.Buffer
	now := time.Now()
	v := &liveView{w: &out, cols: func() int { return cols }, running: map[string]*liveLine{
		"a": {visit: "review#1/look[1]/scout", model: "pi/m1", what: "running go test ./... -run TestSomethingRatherLong", start: now},
		"b": {visit: "review#1/翻訳", model: "claude/m2", what: "書いています書いています書いています", start: now},
		"c": {visit: "review#1/code", model: "codex/m3", what: "running bash -lc 'cat >x <<EOF\nline\nEOF'", start: now},
		"d": {visit: "ok", what: "thinking", start: now},
	}}
	v.redraw()

	if v.drawn != 4 {
		t.Fatalf("drawn = %d, want 4", v.drawn)
	}
	rows := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(rows) != v.drawn {
		t.Fatalf("%d rows for %d live lines:\n%s", len(rows), v.drawn, out.String())
	}
	escape := regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	for _, row := range rows {
		text := escape.ReplaceAllString(row, "")
		if w := displaywidth.String(text); w > cols-1 {
			t.Errorf("row %q is %d columns wide, want at most %d", text, w, cols-1)
		}
		if strings.HasPrefix(text, "  review#1/") && !strings.HasSuffix(text, "…") {
			t.Errorf("row %q was cut without an ellipsis", text)
		}
	}
	// Lines are sorted by visit: "ok" comes first.
	if got := escape.ReplaceAllString(rows[0], ""); !strings.HasPrefix(got, "  ok  -  thinking  ") || strings.HasSuffix(got, "…") {
		t.Errorf("a line that fits was changed: %q", got)
	}
}

func TestFitLine(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"one more col", 11, "one more c…"},
		{"日本語の文", 6, "日本…"}, // two columns each: a third would cross the edge
		{"a\tb\nc", 10, "a b c"},
		{"anything", 0, "…"},
	} {
		if got := fitLine(tc.in, tc.width); got != tc.want {
			t.Errorf("fitLine(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}
