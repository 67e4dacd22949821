package rundir

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/flowrun/flow/engine/record"
)

// Change says how a visit differs between two runs: only in the first
// (removed), only in the second (added), or in both with another outcome.
type Change string

// The changes a diff names.
const (
	Added   Change = "added"
	Removed Change = "removed"
	Changed Change = "changed"
	Same    Change = "same"
)

// VisitDiff is one visit of either run, side by side: A from the first run,
// B from the second (nil where the visit is absent), what differs, and the
// first line where their outputs differ.
type VisitDiff struct {
	Visit  string   `json:"visit"`
	Change Change   `json:"change"`
	Fields []string `json:"fields,omitempty"` // what differs: status, kind, model, output
	A      *Side    `json:"a,omitempty"`
	B      *Side    `json:"b,omitempty"`
	// Line is the first line (from 1) at which the outputs differ, with
	// that line of each side; 0 when the outputs are the same.
	Line  int    `json:"line,omitempty"`
	LineA string `json:"line_a,omitempty"`
	LineB string `json:"line_b,omitempty"`
}

// Side is one run's view of a visit: its status word (ok, failed, skipped,
// running), whether it was reused, its failure kind, model, output and usage.
type Side struct {
	Status string `json:"status"`
	// Reused says the run took the visit's outcome from another run (flow
	// run --reuse, a fork): the same outcome, not a difference.
	Reused bool          `json:"reused,omitempty"`
	Kind   string        `json:"kind,omitempty"`
	Model  string        `json:"model,omitempty"`
	Output any           `json:"output,omitempty"`
	Usage  *record.Usage `json:"usage,omitempty"`
}

// RunDiff compares two runs visit by visit, in the order the visits first
// started in either, with each run's total usage.
type RunDiff struct {
	A, B     string // the runs' ids
	Visits   []VisitDiff
	TotalA   record.Usage
	TotalB   record.Usage
	Same     int // visits with the same outcome in both
	Differed int // visits added, removed or changed
}

// Diff compares the journals of two runs (flow diff, docs/fork-and-diff.md).
func Diff(idA string, a []*record.Fact, idB string, b []*record.Fact) *RunDiff {
	d := &RunDiff{A: idA, B: idB}
	va, vb := Visits(a), Visits(b)
	inB := map[string]Visit{}
	for _, v := range vb {
		inB[v.Start.Visit] = v
	}
	seen := map[string]bool{}
	for _, v := range va {
		path := v.Start.Visit
		seen[path] = true
		w, ok := inB[path]
		if !ok {
			d.add(VisitDiff{Visit: path, Change: Removed, A: side(v)})
			continue
		}
		d.add(compare(path, side(v), side(w)))
	}
	for _, w := range vb {
		if !seen[w.Start.Visit] {
			d.add(VisitDiff{Visit: w.Start.Visit, Change: Added, B: side(w)})
		}
	}
	d.TotalA, d.TotalB = total(va), total(vb)
	return d
}

func (d *RunDiff) add(v VisitDiff) {
	if v.Change == Same {
		d.Same++
	} else {
		d.Differed++
	}
	d.Visits = append(d.Visits, v)
}

// compare sets what differs between two sides of a visit.
func compare(path string, a, b *Side) VisitDiff {
	v := VisitDiff{Visit: path, Change: Same, A: a, B: b}
	for _, f := range []struct {
		name string
		x, y string
	}{{"status", a.Status, b.Status}, {"kind", a.Kind, b.Kind}, {"model", a.Model, b.Model}} {
		if f.x != f.y {
			v.Fields = append(v.Fields, f.name)
		}
	}
	ta, tb := OutputText(a.Output), OutputText(b.Output)
	if ta != tb {
		v.Fields = append(v.Fields, "output")
		v.Line, v.LineA, v.LineB = firstDiffering(ta, tb)
	}
	if len(v.Fields) > 0 {
		v.Change = Changed
	}
	return v
}

// side is a visit as one run ended it.
func side(v Visit) *Side {
	s := &Side{Status: "running"}
	f := v.End
	if f == nil {
		return s
	}
	switch {
	case f.Skipped:
		s.Status = "skipped"
	case f.Succeeded():
		s.Status = "ok"
	default:
		s.Status = "failed"
	}
	if f.Error != nil {
		s.Kind = string(f.Error.Root().Kind)
	}
	s.Reused = f.Reused != nil
	s.Model, s.Output, s.Usage = f.Model, f.Output, f.Usage
	return s
}

// total sums the usage the visits' end facts report.
func total(vs []Visit) record.Usage {
	var u record.Usage
	for _, v := range vs {
		if v.End != nil && v.End.Usage != nil {
			u.Add(*v.End.Usage)
		}
	}
	return u
}

// OutputText is an output as a reader compares it: a string as it is, any
// other value as indented JSON, so that a typed output differs line by line.
func OutputText(o any) string {
	if o == nil {
		return ""
	}
	if s, ok := o.(string); ok {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(o); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// firstDiffering is the first line (from 1) at which a and b differ, and
// that line of each ("" past its end).
func firstDiffering(a, b string) (int, string, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		x, y := at(la, i), at(lb, i)
		if x != y || i >= len(la) || i >= len(lb) {
			return i + 1, x, y
		}
	}
	return 0, "", ""
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}
