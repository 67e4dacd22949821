package temporal

import (
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// recorder is the engine.Recorder of a walk in a workflow: facts are kept
// in the workflow's state (deterministic, rebuilt on replay) and read by
// the facts query; events are not kept, the mirror derives them from the
// facts and the activities' heartbeats. Workflow coroutines run one at a
// time, and queries between them, so it needs no lock.
type recorder struct {
	facts  []*record.Fact
	output any
	values map[string]any // the run's node values, for the mirror's values.json
	// sent are the attempts of visits sent and lost (leaves.lost), until
	// their visits' end facts take them.
	sent map[string][]record.Sent
	// skipRun drops the walk's first run fact: the execution continues
	// the run of its predecessor (continue-as-new).
	skipRun bool
	// frozen drops every fact once the execution continues as new.
	frozen bool
	before int // the facts of the execution this one continued
}

var _ engine.Recorder = (*recorder)(nil)

func (r *recorder) Fact(f *record.Fact) error {
	if r.frozen {
		return nil
	}
	if r.skipRun && f.Type == record.FactRun {
		r.skipRun = false
		return nil
	}
	if sent := r.sent[f.Visit]; f.Type == record.FactEnd && len(sent) > 0 {
		// The lost attempts are the visit's: it was sent again, each time
		// a new attempt (docs/temporal.md, A turn paid for).
		delete(r.sent, f.Visit)
		g := *f
		g.Sent, g.Attempts = sent, max(f.Attempts, 1)+len(sent)
		f = &g
	}
	r.facts = append(r.facts, f)
	return nil
}

func (r *recorder) Event(*record.Event) error { return nil }

// Home names a home by its path in the run: the worker that runs the leaf
// resolves it in its own run directory.
func (r *recorder) Home(path string) string { return path }

// RedactHome does nothing: a home is on the worker that ran the leaf.
func (r *recorder) RedactHome(string, time.Time) error { return nil }

func (r *recorder) Finish(output any) error {
	r.output = output
	return nil
}

func (r *recorder) WriteValues(values map[string]any) error {
	r.values = values
	return nil
}

// pageSize bounds a facts query's answer (a fact holds at most a leaf's
// output, which a worker keeps under engine.AnswerLimit for text).
const pageSize = 200

// page answers the facts query.
func (r *recorder) page(from int) (*FactsPage, error) {
	from = min(max(from, 0), len(r.facts))
	to := min(from+pageSize, len(r.facts))
	return &FactsPage{Facts: r.facts[from:to], Total: len(r.facts), Before: r.before}, nil
}
