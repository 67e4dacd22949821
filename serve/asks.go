package serve

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/rundir"
)

// Ask is a question a served run waits on, as the page and GET /api/asks
// show it.
type Ask struct {
	Run      string `json:"run"`
	Flow     string `json:"flow"`
	Visit    string `json:"visit"`
	Question string `json:"question"`
	// Shown is what the ask's `show:` names, whole: the page renders it
	// as Markdown, safely.
	Shown      []engine.Shown `json:"shown,omitempty"`
	Options    []string       `json:"options,omitempty"`
	Default    string         `json:"default,omitempty"`
	HasDefault bool           `json:"has_default"`
	Since      time.Time      `json:"since"`
	Deadline   time.Time      `json:"deadline,omitzero"` // when the default is taken (or the visit fails timeout)

	answer chan engine.Answer
}

// askKey names a pending ask: a run and a visit.
type askKey struct{ run, visit string }

// asks holds the questions served runs wait on. Safe for concurrent use.
type asks struct {
	mu      sync.Mutex
	pending map[askKey]*Ask
	changed func(run string) // called after an ask of run appears or goes (the page's live update)
}

func newAsks(changed func(run string)) *asks {
	return &asks{pending: map[askKey]*Ask{}, changed: changed}
}

// asker is the engine.Asker of one served run.
type asker struct {
	asks      *asks
	run, flow string
}

// Ask waits for an answer from the page or the API, or for ctx: the
// engine ends it at the ask's timeout, or when the run stops.
func (a *asker) Ask(ctx context.Context, q *engine.Question) (engine.Answer, error) {
	k := askKey{a.run, q.Visit}
	shown := make([]engine.Shown, len(q.Shown))
	for i, s := range q.Shown { // whole, from the answer file (never its path)
		shown[i] = engine.Shown{Node: s.Node, Text: rundir.WholeAnswer(s.Text, s.File)}
	}
	p := &Ask{Run: a.run, Flow: a.flow, Visit: q.Visit, Question: q.Text, Shown: shown, Options: q.Options, Default: q.Default,
		HasDefault: q.HasDefault, Since: time.Now(), answer: make(chan engine.Answer, 1)}
	if q.Timeout > 0 {
		p.Deadline = p.Since.Add(q.Timeout)
	}
	a.asks.mu.Lock()
	a.asks.pending[k] = p
	a.asks.mu.Unlock()
	a.asks.changed(a.run)
	defer func() {
		a.asks.mu.Lock()
		if a.asks.pending[k] == p {
			delete(a.asks.pending, k)
		}
		a.asks.mu.Unlock()
		a.asks.changed(a.run)
	}()
	select {
	case ans := <-p.answer:
		return ans, nil
	case <-ctx.Done():
		return engine.Answer{}, context.Cause(ctx)
	}
}

// answerError is an answer the API refuses: field names what is wrong.
type answerError struct {
	status int
	field  string
	msg    string
}

func (e *answerError) Error() string { return e.msg }

// answer hands value to the ask of visit in run, given by by. An answer
// outside the options, or to no pending ask, is refused.
func (s *asks) answer(run, visit, value, by string) error {
	s.mu.Lock()
	p := s.pending[askKey{run, visit}]
	if p == nil {
		s.mu.Unlock()
		return &answerError{status: 404, field: "visit", msg: fmt.Sprintf("run %s has no question waiting at %q", run, visit)}
	}
	switch {
	case value == "":
		s.mu.Unlock()
		return &answerError{status: 400, field: "answer", msg: "the answer is empty"}
	case len(p.Options) > 0 && !slices.Contains(p.Options, value):
		s.mu.Unlock()
		return &answerError{status: 400, field: "answer", msg: fmt.Sprintf("answer %q is not one of: %s", value, strings.Join(p.Options, ", "))}
	}
	delete(s.pending, askKey{run, visit}) // one answer per question
	s.mu.Unlock()
	p.answer <- engine.Answer{Value: value, By: by}
	return nil
}

// list returns the pending asks, oldest first; of one run if run is set.
func (s *asks) list(run string) []*Ask {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Ask
	for k, p := range s.pending {
		if run == "" || k.run == run {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Visit < out[j].Visit
	})
	return out
}
