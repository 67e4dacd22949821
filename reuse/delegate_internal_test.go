package reuse

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// TestRecordedChildren: a recording's children are its start facts with a
// parent, by parent, in the order they started, once each (a retry starts
// a child again at the same path), with whether each succeeded; a child's
// own children are under the child.
func TestRecordedChildren(t *testing.T) {
	ok, failed := true, false
	facts := []*record.Fact{
		{Type: record.FactStart, Visit: "lead"},
		{Type: record.FactStart, Visit: "lead/delegate:scout#1", Node: "delegate:scout", Parent: "lead", Input: "look at A"},
		{Type: record.FactStart, Visit: "lead/delegate:scout#1/delegate:tester#1", Node: "delegate:tester", Parent: "lead/delegate:scout#1", Input: "test A"},
		{Type: record.FactEnd, Visit: "lead/delegate:scout#1/delegate:tester#1", OK: &ok, Output: "A passes"},
		{Type: record.FactEnd, Visit: "lead/delegate:scout#1", OK: &ok, Output: "found A"},
		{Type: record.FactStart, Visit: "lead/delegate:tester#1", Node: "delegate:tester", Parent: "lead", Input: "test B"},
		{Type: record.FactEnd, Visit: "lead/delegate:tester#1", OK: &failed},
		{Type: record.FactStart, Visit: "lead/delegate:tester#1", Node: "delegate:tester", Parent: "lead", Input: "test B"},
	}
	kids := children(facts)
	want := []child{{"lead/delegate:scout#1", "scout", "look at A", true, "found A"}, {"lead/delegate:tester#1", "tester", "test B", false, ""}}
	if len(kids["lead"]) != 2 || kids["lead"][0] != want[0] || kids["lead"][1] != want[1] {
		t.Errorf("the lead's children: %+v", kids["lead"])
	}
	if got := kids["lead/delegate:scout#1"]; len(got) != 1 || got[0] != (child{"lead/delegate:scout#1/delegate:tester#1", "tester", "test A", true, "A passes"}) {
		t.Errorf("the scout's children: %+v", got)
	}
}

// TestDelegateAgainCallFails: a recorded answer of a turn that delegated
// is not returned when its recorded delegate calls cannot be repeated:
// the error names the visit and the child.
func TestDelegateAgainCallFails(t *testing.T) {
	ok := true
	rec := &Recording{Name: "r1", Dir: t.TempDir(), kids: map[string][]child{"lead": {{"lead/delegate:scout#1", "scout", "look at A", true, "found A"}}}}
	h := hit{rec, &record.Fact{Visit: "lead", OK: &ok, Output: "done"}}
	tu := &engine.Turn{Visit: "lead", Delegate: &engine.Delegation{Socket: filepath.Join(t.TempDir(), "none.sock"), Token: "t"}}
	_, err := delegateAgain(context.Background(), h, tu)
	if err == nil || !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "lead: repeating its recorded delegate call to scout (lead/delegate:scout#1)") {
		t.Errorf("the error: %v", err)
	}
	if _, err := delegateAgain(context.Background(), h, &engine.Turn{Visit: "lead"}); err != nil {
		t.Errorf("a turn that may not delegate repeats nothing: %v", err)
	}
}

// TestChildChanged: a recorded parent's answer stands only with its
// children's: a child that answers otherwise now, succeeds where it
// failed, or is a placeholder of flow plan's walk is named; the same
// answer (a long one by the part its parent read) and a failure then and
// now are not.
func TestChildChanged(t *testing.T) {
	c := child{path: "lead/delegate:scout#1", agent: "scout", task: "look at A", ok: true, answer: "found A"}
	for _, tc := range []struct {
		c     child
		reply engine.DelegateReply
		want  string
	}{
		{c, engine.DelegateReply{Answer: "found A"}, ""},
		{c, engine.DelegateReply{Answer: "found A\n\n[the answer goes on: 90000 bytes in all, in /x/answer.md]"}, ""},
		{c, engine.DelegateReply{Answer: "found B"}, "its child lead/delegate:scout#1 answers otherwise than when recorded"},
		{c, engine.DelegateReply{Answer: "⟦flow plan: the answer of lead/delegate:scout#1⟧"}, "its child lead/delegate:scout#1 runs again"},
		{child{path: c.path}, engine.DelegateReply{Error: "the child failed"}, ""},
		{child{path: c.path}, engine.DelegateReply{Answer: "found A"}, "its child lead/delegate:scout#1 succeeds now; it failed when recorded"},
	} {
		if got := childChanged(tc.c, tc.reply); got != tc.want {
			t.Errorf("childChanged(%+v, %+v) = %q, want %q", tc.c, tc.reply, got, tc.want)
		}
	}
}
