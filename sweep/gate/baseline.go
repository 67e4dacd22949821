package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowrun/flow/sweep"
)

// OpenBaseline reads the baseline a sweep sets (flow gate --baseline):
// the assignment labelled label, or else the one the sweep chooses (what
// `flow pin` writes; a sweep of one assignment, that one), and the counts
// of its recorded runs per task. Every task in tasks must have some.
func OpenBaseline(s *sweep.Sweep, label string, tasks []string) (*Baseline, sweep.Assignment, error) {
	f := s.Snapshot()
	if label == "" {
		label = f.Chosen()
		if label == "" {
			return nil, sweep.Assignment{}, fmt.Errorf("baseline sweep %s has no ended run to choose an assignment from", f.ID)
		}
	}
	a, err := f.Assignment(label)
	if err != nil {
		return nil, a, fmt.Errorf("baseline sweep %s: %w", f.ID, err)
	}
	counts := f.TaskCounts(a.Label)
	var missing []string
	for _, t := range tasks {
		if counts[t].Trials == 0 {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(counts))
		for t, n := range counts {
			if n.Trials > 0 {
				have = append(have, t)
			}
		}
		slices.Sort(have)
		return nil, a, fmt.Errorf("baseline sweep %s has no ended run of task %s on %s (it has %s): give the gate the sweep's tasks file (--inputs)",
			f.ID, strings.Join(missing, ", "), a.Label, strings.Join(have, ", "))
	}
	return &Baseline{Sweep: f.ID, Assignment: a.Label, Recorded: counts}, a, nil
}
