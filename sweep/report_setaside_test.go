package sweep

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
)

// TestReportNamesRateLimitedCells: cells set aside still rate-limited
// after their re-runs, in a sweep with no budget, are reported as such —
// never as skipped by a budget (issue 37).
func TestReportNamesRateLimitedCells(t *testing.T) {
	f := &File{ID: "s", Flow: "f", Spec: Spec{Repeat: 1}}
	f.Assignments = []Assignment{{Label: "small", Model: "small"}}
	for i, task := range []string{"add", "mul"} {
		o := &Outcome{Status: record.StatusFailed, Failure: "rate_limit", Message: "429 Too Many Requests", Attempts: 1}
		f.Cells = append(f.Cells, &Cell{Index: i + 1, Assignment: "small", Task: task, Repeat: 1, Status: StatusSkipped, Outcome: o,
			Reruns: MaxReruns, Note: "still rate_limit after 10 re-runs, not scored: 429 Too Many Requests"})
	}
	r := Build(f)
	if r.Cells.Skipped != 0 || r.Cells.SetAside != 2 || r.Cells.SetAsideBy["rate_limit"] != 2 {
		t.Errorf("counts: %+v, want 2 set aside by rate_limit and none skipped", r.Cells)
	}
	md, err := markdown(r)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(r.Warnings, "\n") + "\n" + string(md)
	if strings.Contains(text, "budget") {
		t.Errorf("a sweep with no budget speaks of one:\n%s", text)
	}
	if !strings.Contains(text, "2 of 2 cells did not end (2 set aside still failing on the infrastructure after re-runs (rate_limit 2), not scored)") {
		t.Errorf("the report does not say the cells were rate-limited:\n%s", text)
	}
}
