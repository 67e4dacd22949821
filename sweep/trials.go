package sweep

import (
	"fmt"
)

// Trials: a sweep that grows. `flow gate` (package sweep/gate) runs its
// trials as the cells of a sweep of one assignment, adding one cell per
// task still undecided after every round, so each trial is an ordinary
// run of an ordinary sweep — the same budget, re-runs and reports.

// AddTrials appends one pending cell for each task named, of the sweep's
// first assignment and parameter set, each the next repeat of its task,
// and saves the sweep file. Run then runs them.
func (s *Sweep) AddTrials(tasks []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ps := s.f.Assignments[0].Label, s.f.ParamSets[0].Label
	last := map[string]*Cell{}
	for _, c := range s.f.Cells {
		if c.Assignment == a && c.Params == ps && (last[c.Task] == nil || c.Repeat > last[c.Task].Repeat) {
			last[c.Task] = c
		}
	}
	for _, t := range tasks {
		prev := last[t]
		if prev == nil {
			return fmt.Errorf("adding a trial: the sweep has no task %q", t)
		}
		c := &Cell{Index: len(s.f.Cells) + 1, Assignment: a, Params: ps, Task: t, Repeat: prev.Repeat + 1, Input: prev.Input, Status: StatusPending}
		s.f.Cells = append(s.f.Cells, c)
		last[t] = c
	}
	return s.saveLocked()
}

// Spent is what the sweep's cells have spent so far, stopped ones
// included.
func (s *Sweep) Spent() Budget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spentLocked()
}

// TaskCount is what one task's cells of one assignment came to.
type TaskCount struct {
	Trials    int // cells that ended: the samples
	Successes int
	Open      int // cells that have not ended (pending, stopped, skipped, set aside)
}

// TaskCounts counts, per task, the cells of the assignment labelled
// assignment ("" the first).
func (f *File) TaskCounts(assignment string) map[string]TaskCount {
	if assignment == "" && len(f.Assignments) > 0 {
		assignment = f.Assignments[0].Label
	}
	out := map[string]TaskCount{}
	for _, c := range f.Cells {
		if c.Assignment != assignment {
			continue
		}
		n := out[c.Task]
		switch {
		case c.Status.Ended() && c.Outcome != nil:
			n.Trials++
			if c.Status == StatusSucceeded {
				n.Successes++
			}
		default:
			n.Open++
		}
		out[c.Task] = n
	}
	return out
}

// Chosen is the label of the assignment the sweep's report chooses (what
// `flow pin` writes), or of its only assignment; "" when no cell ended.
func (f *File) Chosen() string {
	if len(f.Assignments) == 1 {
		return f.Assignments[0].Label
	}
	if p := Build(f).Pin; p != nil {
		return p.Assignment
	}
	return ""
}

// Assignment finds an assignment of the sweep by its label, in any order
// of its parts.
func (f *File) Assignment(label string) (Assignment, error) {
	for _, a := range f.Assignments {
		if a.Label == label {
			return a, nil
		}
	}
	return baseline(f.Assignments, label)
}
