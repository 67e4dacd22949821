package reuse

import (
	"strings"
	"testing"
)

// TestPromptMissIsALineDiff: the diff of a changed line marks that line
// only, once on each side; the identical lines around it are context.
func TestPromptMissIsALineDiff(t *testing.T) {
	was := "one\ntwo\nthree\nfour\nfive"
	now := "one\ntwo\nTHREE\nfour\nfive"
	m := promptMiss(was, now)
	if m.Reason != "prompt changed at line 3" {
		t.Errorf("reason %q", m.Reason)
	}
	var minus, plus []string
	for _, l := range strings.Split(m.Diff, "\n") {
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			minus = append(minus, l)
		case strings.HasPrefix(l, "+"):
			plus = append(plus, l)
		}
	}
	if strings.Join(minus, "|") != "-three" || strings.Join(plus, "|") != "+THREE" {
		t.Errorf("the diff marks %v and %v, want only the changed line:\n%s", minus, plus, m.Diff)
	}
	if !strings.HasPrefix(m.Diff, "--- recorded\n+++ now\n@@ ") || !strings.Contains(m.Diff, "\n four\n") {
		t.Errorf("not a unified diff with context:\n%s", m.Diff)
	}
}
