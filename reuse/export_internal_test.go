package reuse

import (
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

// TestRemoteSetLeavesWhatWorkersCannotTake: a Remote set (a run on
// Temporal) does not hand on a memory scope's turn, an isolated visit or
// a command keyed by its working directory's content, and says why; a
// plain turn it hands on with its children. A local set takes them all.
func TestRemoteSetLeavesWhatWorkersCannotTake(t *testing.T) {
	rec := &Recording{Name: "r1", Dir: t.TempDir(), kids: map[string][]child{
		"lead": {{path: "lead/delegate:scout#1", agent: "scout", task: "look", ok: true, answer: "found"}}}}
	key := func(k string, parts map[string]string, isolated bool) *flows.VisitKey {
		return &flows.VisitKey{Key: k, Parts: parts, Isolated: isolated}
	}
	facts := map[string]*record.Fact{
		"plain":    {Visit: "lead", Key: key("plain", nil, false), Output: "ok"},
		"memory":   {Visit: "chat#2", Session: "s-1", Key: key("memory", nil, false)},
		"isolated": {Visit: "w/edit", Key: key("isolated", nil, true)},
		"workdir":  {Visit: "build", Key: key("workdir", map[string]string{flows.KeyWorkdir: "tree"}, false)},
	}
	s := &Set{byKey: map[string]hit{}}
	for k, f := range facts {
		s.byKey[k] = hit{rec, f}
	}
	if got := s.Recorded(); len(got) != 4 {
		t.Errorf("a local set hands on %d visits, want 4", len(got))
	}
	got := s.Remote().Recorded()
	if len(got) != 1 || len(got["plain"].Children) != 1 || got["plain"].Children[0].Answer != "found" || got["plain"].Run != "r1" {
		t.Errorf("a remote set hands on %+v; want only the plain turn, with its child", got)
	}
	for k, want := range map[string]string{"memory": awayMemory, "isolated": awayIsolated, "workdir": awayWorkdir, "plain": ""} {
		if why := s.Remote().awayKey(facts[k].Key); why != want {
			t.Errorf("%s: away %q, want %q", k, why, want)
		}
		if why := s.awayKey(facts[k].Key); why != "" {
			t.Errorf("%s: a local set says %q", k, why)
		}
	}
}
