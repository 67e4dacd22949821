package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// scriptedLeaves is a LeafRunner whose turns end as each visit's script
// says, and that records what the walker handed it.
type scriptedLeaves struct {
	mu    sync.Mutex
	turns []Turn
	end   map[string]error
}

func (l *scriptedLeaves) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	l.mu.Lock()
	l.turns = append(l.turns, *t)
	l.mu.Unlock()
	in := int64(7)
	res := &TurnResult{Status: Completed, Output: "ok", Usage: record.Usage{Input: &in}, Worker: "w1", Transcript: "/far/away.jsonl"}
	if err := l.end[t.Visit]; err != nil {
		res.Status = Aborted
		return res, err
	}
	return res, nil
}

func (l *scriptedLeaves) Command(ctx context.Context, c *Command) (*CommandResult, error) {
	if err := l.end[c.Visit]; err != nil {
		return nil, err
	}
	return &CommandResult{Passed: true, Worker: "w2"}, nil
}

// memoryRecorder keeps facts in memory, as a workflow does.
type memoryRecorder struct {
	mu     sync.Mutex
	facts  []*record.Fact
	output any
}

func (m *memoryRecorder) Fact(f *record.Fact) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.facts = append(m.facts, f)
	return nil
}
func (m *memoryRecorder) Event(*record.Event) error { return nil }
func (m *memoryRecorder) Home(path string) string   { return path }
func (m *memoryRecorder) Finish(out any) error      { m.output = out; return nil }

func (m *memoryRecorder) RedactHome(string, time.Time) error { return nil }
func (m *memoryRecorder) WriteValues(map[string]any) error   { return nil }

func TestWalkThroughALeafRunnerMapsItsErrorsToKinds(t *testing.T) {
	p := load(t, "seam", `name: seam
budget: {tokens: 100}
`+agents+`nodes:
  - {id: fine, agent: worker, prompt: go}
  - {id: slow, agent: worker, prompt: go, on_fail: continue}
  - {id: greedy, agent: worker, prompt: go, on_fail: continue}
  - {id: gone, agent: worker, prompt: go, on_fail: continue}
  - {id: broken, agent: worker, prompt: go, on_fail: continue}
  - {id: cmd, run: [x], on_fail: continue}
  - {id: cmdslow, run: [x], on_fail: continue}
`)
	onHosts(t, func(t *testing.T, h host) {
		leaves := &scriptedLeaves{end: map[string]error{
			"slow":    fmt.Errorf("leaf: %w", ErrTimeout),
			"greedy":  fmt.Errorf("leaf: %w", ErrBudget),
			"gone":    fmt.Errorf("leaf: %w", ErrUnavailable),
			"broken":  errors.New("the provider said no"),
			"cmdslow": fmt.Errorf("leaf: %w", ErrTimeout),
		}}
		rec := &memoryRecorder{}
		res, err := Walk(context.Background(), p, Options{RunID: "r1"}, NewHost(Parts{WorkDir: t.TempDir(), Runtime: h.runtime(), Leaves: leaves, Recorder: rec}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Fatalf("run failed: %+v", res.Failure)
		}
		want := map[string]schema.FailKind{"slow": schema.FailTimeout, "greedy": schema.FailBudget, "gone": schema.FailUnavailable,
			"broken": schema.FailProvider, "cmdslow": schema.FailTimeout}
		for _, f := range rec.facts {
			if f.Type != "end" {
				continue
			}
			var got schema.FailKind
			if f.Error != nil {
				got = f.Error.Kind
			}
			if got != want[f.Visit] {
				t.Errorf("%s ended %q, want %q", f.Visit, got, want[f.Visit])
			}
			switch f.Visit {
			case "fine":
				if f.Worker != "w1" || f.Transcript != "/far/away.jsonl" || f.Usage.Tokens() != 7 {
					t.Errorf("fine's end fact lost where it ran or what it spent: %+v", f)
				}
			case "cmd":
				if f.Worker != "w2" {
					t.Errorf("cmd's end fact has worker %q, want w2", f.Worker)
				}
			}
		}
		// Each turn is told what the budget had left as it started, and the
		// stopped turns' tokens counted.
		lefts := []int64{}
		for _, tr := range leaves.turns {
			if tr.Watch == nil {
				t.Errorf("%s got no budget watch", tr.Visit)
			}
			lefts = append(lefts, tr.TokensLeft)
		}
		if fmt.Sprint(lefts) != "[100 93 86 79 72]" {
			t.Errorf("tokens left at each turn's start = %v, want [100 93 86 79 72]", lefts)
		}
		if leaves.turns[0].Home != "fine" {
			t.Errorf("a turn's home is the recorder's name for it, got %q", leaves.turns[0].Home)
		}
	})
}
