package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a diagnostic stops the flow from running.
type Severity int

// The severities.
const (
	Error Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem found in a flow or agent file. It prints as
// `file:line:col: code: summary`, then the source line it points at with a
// caret under the column when the loader quoted it (Quote), then the detail
// (how to fix it) on an indented line when there is one (docs/flow-files.md,
// Diagnostics).
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Pos      Pos      `json:"pos"`
	Code     Code     `json:"code"`    // stable, kebab-case: "unknown-key", "type", ... (codes.go)
	Summary  string   `json:"summary"` // one line, lower case, no final period
	Detail   string   `json:"detail,omitempty"`
	// Source is the line Pos points at, as written (cut around the column
	// when long), and SourceCol the column in Source the caret stands
	// under; both are empty until Quote fills them.
	Source    string `json:"source,omitempty"`
	SourceCol int    `json:"source_col,omitempty"`
}

func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(string(d.Code))
	b.WriteString(": ")
	b.WriteString(d.Summary)
	d.writeQuote(&b)
	if d.Detail != "" {
		b.WriteString("\n\thint: ")
		b.WriteString(strings.ReplaceAll(d.Detail, "\n", "\n\t"))
	}
	return b.String()
}

// Diagnostics is a list of problems, collected so that every fault of a file
// is reported at once rather than the first one only.
type Diagnostics []Diagnostic

// Add appends an error diagnostic.
func (ds *Diagnostics) Add(pos Pos, code Code, detail, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Severity: Error, Pos: pos, Code: code, Summary: fmt.Sprintf(format, args...), Detail: detail})
}

// Warn appends a warning.
func (ds *Diagnostics) Warn(pos Pos, code Code, detail, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Severity: Warning, Pos: pos, Code: code, Summary: fmt.Sprintf(format, args...), Detail: detail})
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == Error })
}

// Sorted returns the diagnostics ordered by file, line and column, without
// duplicates.
func (ds Diagnostics) Sorted() Diagnostics {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Summary, b.Summary))
	})
	return slices.CompactFunc(out, func(a, b Diagnostic) bool {
		return a.Pos == b.Pos && a.Code == b.Code && a.Summary == b.Summary
	})
}

// Error renders every diagnostic, one per line, so Diagnostics can be
// returned as an error.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds.Sorted() {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// DidYouMean returns a hint naming the closest of candidates to got, or "".
func DidYouMean(got string, candidates []string) string {
	best, bestD := "", len(got)/4+2 // at most 1 + len/4 edits away
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(got), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
