package codex

import "testing"

// A thread's saved figures that no provider bills (negative, absurd) are
// lost ones: the next turn records the thread's whole usage, never less.
func TestThreadBeforeRefusesHostileFigures(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	huge, neg, ok := int64(1)<<62, int64(-5000), int64(100)
	for _, u := range []threadUsage{{Input: &huge, Output: &ok}, {Input: &ok, Output: &neg}} {
		if err := saveThread(home, "a", "th", u); err != nil {
			t.Fatal(err)
		}
		if got := threadBefore(home, "a", "th"); got.Input != nil || got.Output != nil {
			t.Errorf("saved %+v, read back %+v; want it lost", u, got)
		}
	}
	if err := saveThread(home, "a", "th", threadUsage{Input: &ok}); err != nil {
		t.Fatal(err)
	}
	if got := threadBefore(home, "a", "th"); got.Input == nil || *got.Input != 100 {
		t.Errorf("a fair figure read back as %+v", got)
	}
}
