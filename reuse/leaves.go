package reuse

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// Leaves is a LeafRunner that answers a leaf whose key a recording holds
// from the recording, and hands every other leaf to Next. With Next nil it
// is offline (flow test): a miss fails closed, naming the first input that
// differs from the nearest recorded visit, with a diff.
type Leaves struct {
	From *Set
	Next engine.LeafRunner
	// Commands runs commands when Next is nil (flow test): a command whose
	// node says reuse: never (it must be fresh, such as one that makes a
	// scratch repository), or every command with LiveCommands
	// (--live-commands). Any other command is answered from the recording
	// by its key, a miss failing closed: what a command printed when
	// recorded (a git log, a wc) is what the test replays.
	Commands     engine.Commander
	LiveCommands bool

	mu     sync.Mutex
	misses []Miss
}

var _ engine.LeafRunner = (*Leaves)(nil)

// Miss is a leaf that no recording answered: the visit, and why.
type Miss struct {
	Visit  string
	Reason string // the first input that differs, e.g. "prompt changed at line 3"
	Diff   string
}

// ErrMiss is wrapped by the error of an offline turn no recording
// answers.
var ErrMiss = fmt.Errorf("no recording answers this visit")

// Misses are the leaves no recording answered so far.
func (l *Leaves) Misses() []Miss {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Miss(nil), l.misses...)
}

func (l *Leaves) miss(visit string, m Miss) error {
	m.Visit = visit
	l.mu.Lock()
	l.misses = append(l.misses, m)
	l.mu.Unlock()
	msg := fmt.Sprintf("%v: %s: %s", ErrMiss, visit, m.Reason)
	if m.Diff != "" {
		msg += "\n" + m.Diff
	}
	return unavailable("%s", msg)
}

// Turn answers t from the recording of its key, else runs it. A visit in
// an isolated scope is answered only when what it changed in its
// worktree can be made again in this one (the walker then commits and
// lands it for real); when it cannot, it runs live, or offline misses.
func (l *Leaves) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	var why Miss
	if t.Key != nil {
		if h, ok := l.From.lookup(t.Key.Key); ok {
			res, err := l.recorded(ctx, h, t, &why)
			if err != nil || res != nil {
				return res, err
			}
			restart(t) // its children ran: a live turn's calls are answered by them
		}
	}
	if l.Next != nil {
		return l.Next.Turn(ctx, t)
	}
	if why.Reason == "" {
		why = l.From.explain(t.Visit, t.Key, t.Model)
	}
	return nil, l.miss(t.Visit, why)
}

// recorded answers t from the recorded visit h: its children first, as
// the recorded visit waited on them (delegateAgain), then its answer — if
// every child answered as recorded, and, in an isolated scope, its
// recorded change is made again in the worktree. Else it returns no
// result and why, and the turn runs live (or offline misses).
func (l *Leaves) recorded(ctx context.Context, h hit, t *engine.Turn, why *Miss) (*engine.TurnResult, error) {
	changed, err := delegateAgain(ctx, h, t)
	if err != nil {
		return nil, err
	}
	if changed != "" {
		*why = Miss{Reason: changed}
		return nil, nil
	}
	res, err := answer(h, t)
	if err == nil && t.Key.Isolated {
		if err := h.replayChange(ctx, t.WorkDir); err != nil {
			*why = unmade(err)
			return nil, nil
		}
	}
	return res, err
}

// Command answers c from the recording when its node says reuse: true,
// else runs it; offline (flow test), it answers it from the recording
// whatever its node says, unless its node says reuse: never (no key) or
// LiveCommands: then it runs it for real (Commands).
func (l *Leaves) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if l.Next == nil && l.Commands != nil && (l.LiveCommands || c.Key == nil) { // flow test: this command runs for real
		return local.Leaves{Commands: l.Commands}.Command(ctx, c)
	}
	key := c.Key
	if l.Next != nil && !c.Reuse {
		key = nil // a command runs again unless its node says reuse: true
	}
	var why Miss
	if key != nil {
		if h, ok := l.From.lookup(key.Key); ok {
			if !key.Isolated {
				return commandAnswer(h)
			}
			err := h.replayChange(ctx, c.Dir)
			if err == nil {
				return commandAnswer(h)
			}
			why = unmade(err)
		}
	}
	if l.Next != nil {
		return l.Next.Command(ctx, c)
	}
	if why.Reason == "" {
		why = l.From.explain(c.Visit, key, "")
	}
	return nil, l.miss(c.Visit, why)
}

// unmade is the miss of an isolated visit whose recorded change to its
// worktree could not be made again.
func unmade(err error) Miss {
	return Miss{Reason: "its recorded change to the worktree cannot be made again here: " + err.Error()}
}

// answer is the recorded end h as this turn's result: its value, a copy
// of its answer file in this visit's home (so that a read of it names
// this run's file), its transcript and session, and no usage.
func answer(h hit, t *engine.Turn) (*engine.TurnResult, error) {
	f := h.fact
	res := &engine.TurnResult{Status: engine.Completed, Session: f.Session, Size: f.Size,
		Reused: &record.Reused{Run: h.rec.Name, Visit: f.Visit, Saved: f.Usage}}
	if v, ok := f.Output.(string); ok && t.OutputSchema == nil {
		res.Output = v
	} else { // a typed answer is handed on as JSON, a string too
		b, err := json.Marshal(f.Output)
		if err != nil {
			return nil, unavailable("the recorded answer of %s: %w", f.Visit, err)
		}
		res.Output = string(b)
	}
	if f.File != "" {
		src := h.rec.locate(f.File)
		if src == "" {
			return nil, unavailable("the recorded answer file of %s, %s, is not inside the recording %s", f.Visit, f.File, h.rec.Dir)
		}
		dst := filepath.Join(t.Home, filepath.Base(f.File))
		if err := copyFile(src, dst); err != nil {
			return nil, unavailable("the recorded answer file of %s: %w", f.Visit, err)
		}
		res.File = dst
	}
	if f.Transcript != "" {
		res.Transcript = h.rec.locate(f.Transcript)
	} else if p := rundir.Home(h.rec.Dir, f.Visit); within(h.rec.Dir, p) {
		res.Transcript = p // the recorded visit's home, where its transcript is
	}
	return res, nil
}

func commandAnswer(h hit) (*engine.CommandResult, error) {
	out, _ := h.fact.Output.(map[string]any)
	res := &engine.CommandResult{Reused: &record.Reused{Run: h.rec.Name, Visit: h.fact.Visit, Saved: h.fact.Usage}}
	res.Passed, _ = out["passed"].(bool)
	exit, _ := out["exit"].(float64)
	res.Exit = int(exit)
	res.Report, _ = out["report"].(string)
	return res, nil
}

func copyFile(src, dst string) error {
	b, err := rundir.ReadRegular(src) // not through a link, never a FIFO
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
