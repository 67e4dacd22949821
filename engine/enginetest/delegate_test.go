package enginetest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// loadText loads a flow written into a temporary directory.
func loadText(t *testing.T, name, src string) *flows.Plan {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	return plan
}

// TestRunawayDelegation is an agent that delegates to itself at every
// level, as many times as it can, over 50 runs of different limits: no
// child is ever deeper than max_depth, no visit starts more than
// max_children, a refused call starts no turn, and the children's spend
// stays within the delegation's budget plus one turn.
func TestRunawayDelegation(t *testing.T) {
	const turnTokens = 100
	rng := rand.New(rand.NewPCG(27, 1))
	for run := range 50 {
		depth, children, budget := 1+rng.IntN(3), 1+rng.IntN(4), int64(100+rng.IntN(20)*100)
		plan := loadText(t, "runaway", fmt.Sprintf(`name: runaway
agents:
  - {name: looper, description: delegates at every level, driver: exec, command: [x]}
nodes:
  - id: lead
    agent: looper
    prompt: Go.
    delegate: {agents: [looper], max_depth: %d, max_children: %d, budget: {tokens: %d}}
`, depth, children, budget))
		h := enginetest.New()
		turns, refused, answered := 0, 0, 0
		h.Turns = func(turn *engine.Turn) (*engine.TurnResult, error) {
			turns++
			if turn.Delegate != nil {
				for i := range children + 3 { // more than it may
					reply, err := h.Delegate(context.Background(), turn, "looper", fmt.Sprintf("dig %d", i))
					switch {
					case err != nil:
						t.Errorf("run %d: %v", run, err)
					case reply.Error != "":
						refused++
					default:
						answered++
					}
				}
			}
			in := int64(turnTokens)
			return &engine.TurnResult{Status: engine.Completed, Output: "found it", Usage: record.Usage{Input: &in}}, nil
		}
		h.Dir = t.TempDir()
		res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, h, nil)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if !res.OK {
			t.Fatalf("run %d failed: %+v", run, res.Failure)
		}
		starts, kids := 0, map[string]int{}
		var childSpend int64
		for _, f := range h.Facts() {
			if f.Type == record.FactStart && f.Kind == "agent" {
				starts++
			}
			if f.Type == record.FactStart && f.Parent != "" {
				kids[f.Parent]++
				if d := strings.Count(f.Visit, "/delegate:"); d > depth {
					t.Errorf("run %d: %s is %d deep, past max_depth %d", run, f.Visit, d, depth)
				}
				if !strings.HasPrefix(f.Visit, f.Parent+"/delegate:looper#") {
					t.Errorf("run %d: child %s is not under its parent %s", run, f.Visit, f.Parent)
				}
			}
			if f.Type == record.FactEnd && strings.Contains(f.Visit, "/delegate:") && f.Usage != nil {
				childSpend += f.Usage.Tokens()
			}
		}
		for parent, n := range kids {
			if n > children {
				t.Errorf("run %d: %s started %d children, past max_children %d", run, parent, n, children)
			}
		}
		if turns != starts {
			t.Errorf("run %d: %d turns ran for %d agent visits: a refused call started one", run, turns, starts)
		}
		if refused == 0 {
			t.Errorf("run %d: no call was refused", run)
		}
		if childSpend > budget+turnTokens {
			t.Errorf("run %d: the children spent %d tokens, past the budget %d plus one turn", run, childSpend, budget)
		}
		if got := res.Usage.Tokens(); got != int64(turns)*turnTokens {
			t.Errorf("run %d: the run's total is %d tokens, its %d turns spent %d", run, got, turns, turns*turnTokens)
		}
	}
}

// TestDelegateResumeMatchesRepeats: a parent whose turn failed after two
// calls with the same task, and a third that failed, runs again on resume
// and repeats them: the nth repeat is answered by the nth recorded child,
// the failed one's failure stays, and no child runs again.
func TestDelegateResumeMatchesRepeats(t *testing.T) {
	plan := loadText(t, "again", `name: again
agents:
  - {name: lead, description: leads, driver: exec, command: [x]}
  - {name: scout, description: scouts, driver: exec, command: [x]}
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    delegate: {agents: [scout], max_children: 3}
`)
	script := func(h *enginetest.Host, scoutTurns *int, failLead bool, replies *[]engine.DelegateReply) func(*engine.Turn) (*engine.TurnResult, error) {
		return func(turn *engine.Turn) (*engine.TurnResult, error) {
			in := int64(5)
			if turn.Agent.Name == "scout" {
				*scoutTurns++
				if strings.HasPrefix(turn.Prompt, "break") {
					return &engine.TurnResult{Status: engine.Failed, Diagnostics: []string{"broke"}}, nil
				}
				return &engine.TurnResult{Status: engine.Completed, Output: fmt.Sprintf("answer %d", *scoutTurns), Usage: record.Usage{Input: &in}}, nil
			}
			for _, task := range []string{"same", "same", "break"} {
				r, err := h.Delegate(context.Background(), turn, "scout", task)
				if err != nil {
					t.Fatal(err)
				}
				*replies = append(*replies, r)
			}
			if failLead {
				return &engine.TurnResult{Status: engine.Failed, Diagnostics: []string{"lead died"}}, nil
			}
			return &engine.TurnResult{Status: engine.Completed, Output: "done", Usage: record.Usage{Input: &in}}, nil
		}
	}
	h := enginetest.New()
	var first, again []engine.DelegateReply
	turns := 0
	h.Turns = script(h, &turns, true, &first)
	h.Dir = t.TempDir()
	res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, h, nil)
	if err != nil || res.OK {
		t.Fatalf("first attempt: %v, %+v", err, res)
	}
	if turns != 3 {
		t.Fatalf("the first attempt ran %d scout turns, want 3", turns)
	}
	h2 := enginetest.New()
	turns2 := 0
	h2.Turns = script(h2, &turns2, false, &again)
	h2.Dir = t.TempDir()
	res, err = engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, h2, h.Facts())
	if err != nil || !res.OK {
		t.Fatalf("resumed attempt: %v, %+v", err, res)
	}
	if turns2 != 0 {
		t.Errorf("the resumed attempt ran %d scout turns, want none", turns2)
	}
	for i := range first {
		if first[i] != again[i] {
			t.Errorf("call %d: first %+v, resumed %+v", i, first[i], again[i])
		}
	}
	if again[0].Answer != "answer 1" || again[1].Answer != "answer 2" || !strings.Contains(again[2].Error, "lead/delegate:scout#3 failed") {
		t.Errorf("resumed replies: %+v", again)
	}
	for _, f := range h2.Facts() {
		if f.Type == "start" && f.Parent != "" {
			t.Errorf("the resumed attempt started a child: %s", f.Visit)
		}
	}
}
