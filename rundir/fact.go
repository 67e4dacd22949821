package rundir

import (
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"strings"
	"time"
)

// Visit is one visit as the journal tells it: its start and, once it
// ended, its end.
type Visit struct {
	Start *record.Fact
	End   *record. // nil while it runs, or if its engine died first
		Fact
}

// Visits pairs facts into visits, one per visit path, in the order the
// visits first started, each with its latest start and end: a visit that
// ran again in a resumed attempt keeps its place. An isolated visit whose
// changes conflicted when they landed, after its end, ends with the land
// fact's failure.
func Visits(facts []*record.Fact) []Visit {
	var visits []Visit
	row := map[string]int{}
	for _, f := range facts {
		switch f.Type {
		case record.FactStart:
			if i, ok := row[f.Visit]; ok {
				visits[i] = Visit{Start: f}
				continue
			}
			row[f.Visit] = len(visits)
			visits = append(visits, Visit{Start: f})
		case record.FactEnd:
			if i, ok := row[f.Visit]; ok {
				visits[i].End = f
				continue
			}
			// A journal always has the start before the end; one written
			// by hand may not: the start is then read off the end.
			start := &record.Fact{Type: record.FactStart, Time: f.Time.Add(-time.Duration(f.WallMS) * time.Millisecond), Visit: f.Visit, Node: f.Node, Kind: f.Kind}
			row[f.Visit] = len(visits)
			visits = append(visits, Visit{Start: start, End: f})
		case record.FactLand:
			if i, ok := row[f.Visit]; ok && f.Error != nil && visits[i].End != nil {
				end := *visits[i].End
				failed := false
				end.OK, end.Error, end.Worktree = &failed, f.Error, f.Worktree
				visits[i].End = &end
			}
		}
	}
	return visits
}

// SentText says what the visit's sent attempts were, for flow show and
// the report; "" when there were none.
func SentText(f *record.Fact) string {
	var parts []string
	for _, s := range f.Sent {
		spend := "spend unknown"
		if s.Tokens != nil {
			spend = fmt.Sprintf("%d tokens as last reported", *s.Tokens)
		}
		w := s.Worker
		if w == "" {
			w = "a worker"
		}
		parts = append(parts, fmt.Sprintf("attempt %d sent on %s, which died before it ended (%s)", s.Attempt, w, spend))
	}
	return strings.Join(parts, "; ")
}
