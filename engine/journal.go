package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Fact is one line of journal.jsonl. Fields are set according to Type:
//
//   - "run": the run started (Input, Flow) or ended (Status, Failure).
//   - "start": a block started, or a leaf was still running at a flush
//     (Visit, Node, Kind); a quick leaf has no start fact.
//   - "end": a visit ended with its whole outcome (Kind, OK, Output, Error,
//     Skipped, Usage, Attempts, Session), enough to rebuild its value
//     without running it again.
type Fact struct {
	Type     string    `json:"type"`
	Time     time.Time `json:"time"`
	Visit    string    `json:"visit,omitempty"`
	Node     string    `json:"node,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	OK       *bool     `json:"ok,omitempty"`
	Output   any       `json:"output,omitempty"`
	Error    *Failure  `json:"error,omitempty"`
	Skipped  bool      `json:"skipped,omitempty"`
	Usage    *Usage    `json:"usage,omitempty"`
	Model    string    `json:"model,omitempty"`
	Timeout  string    `json:"timeout,omitempty"` // the resolved bound on each turn
	Attempts int       `json:"attempts,omitempty"`
	Session  string    `json:"session,omitempty"`
	Scope    string    `json:"scope,omitempty"` // the memory scope the session belongs to
	WallMS   int64     `json:"wall_ms,omitempty"`
	// run facts
	Flow   string `json:"flow,omitempty"`
	RunID  string `json:"run,omitempty"`
	Status string `json:"status,omitempty"` // running | succeeded | failed | stopped
	Input  any    `json:"input,omitempty"`
	// Resumed marks the run fact of a resumed attempt.
	Resumed bool `json:"resumed,omitempty"`
}

// Visit is one visit as the journal tells it: its start and, once it
// ended, its end.
type Visit struct {
	Start *Fact
	End   *Fact // nil while it runs, or if its engine died first
}

// JournalVisits sorts a journal's facts into visits, one per visit path,
// in the order the visits first appear, each with its latest start and its
// end. A leaf visit that ended quickly has only its end fact (see
// store.begin); its start is made up from the end's time and wall_ms.
func JournalVisits(facts []Fact) []Visit {
	_, visits := records(pointers(facts))
	return visits
}

// records sorts facts into run facts and visits, as JournalVisits.
func records(facts []*Fact) (runs []*Fact, visits []Visit) {
	row := map[string]int{}
	for _, f := range facts {
		switch f.Type {
		case "run":
			runs = append(runs, f)
		case "start":
			if i, ok := row[f.Visit]; ok {
				visits[i] = Visit{Start: f}
			} else {
				row[f.Visit] = len(visits)
				visits = append(visits, Visit{Start: f})
			}
		case "end":
			if i, ok := row[f.Visit]; ok {
				visits[i].End = f
				continue
			}
			started := f.Time.Add(-time.Duration(f.WallMS) * time.Millisecond)
			row[f.Visit] = len(visits)
			visits = append(visits, Visit{Start: &Fact{Type: "start", Time: started, Visit: f.Visit, Node: f.Node, Kind: f.Kind}, End: f})
		}
	}
	return runs, visits
}

// ReadJournal reads a run's journal. A torn last line (the engine died
// mid-write) is ignored; a bad line elsewhere is an error naming it. The
// journal of a live run, or of one whose engine died, ends in zero bytes
// made ready for the facts to come, where reading stops.
func ReadJournal(runDir string) ([]Fact, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "journal.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("reading journal: %w", err)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	var facts []Fact
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var f Fact
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			if !bytes.HasSuffix(b, []byte("\n")) && line == bytes.Count(b, []byte("\n"))+1 {
				break // torn last line
			}
			return facts, fmt.Errorf("reading journal line %d: %w", line, err)
		}
		facts = append(facts, f)
	}
	return facts, sc.Err()
}

// Event is one line of events.jsonl, and what the live view receives.
type Event struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"` // run.start, run.end, visit.start, visit.end, progress
	Run      string    `json:"run,omitempty"`
	Visit    string    `json:"visit,omitempty"`
	Node     string    `json:"node,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	Driver   string    `json:"driver,omitempty"`
	Model    string    `json:"model,omitempty"`
	Activity string    `json:"activity,omitempty"`
	Tokens   int64     `json:"tokens,omitempty"`
	OK       *bool     `json:"ok,omitempty"`
	Error    *Failure  `json:"error,omitempty"`
	Usage    *Usage    `json:"usage,omitempty"`
	WallMS   int64     `json:"wall_ms,omitempty"`
	Status   string    `json:"status,omitempty"`
	Dir      string    `json:"dir,omitempty"`
}
