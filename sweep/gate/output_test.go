package gate

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		verdicts []Verdict
		want     int
	}{
		{[]Verdict{Pass, Pass}, 0},
		{[]Verdict{Pass, Inconclusive}, 3},
		{[]Verdict{Inconclusive, Fail, Pass}, 1},
		{nil, 0},
	} {
		res := &Result{}
		for _, v := range tc.verdicts {
			res.Tasks = append(res.Tasks, Task{Verdict: v})
		}
		if got := res.Exit(); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.verdicts, got, tc.want)
		}
	}
}

// TestReportsKeepHostileNames: a task id with markup, a pipe and a
// newline stays one testcase of well-formed XML and one row of the table.
func TestReportsKeepHostileNames(t *testing.T) {
	id := "a<b>&\"c|d\ne"
	res := &Result{Tasks: []Task{{ID: id, Verdict: Fail, Trials: 5, Interval: [2]float64{0, 0.43}, PValue: 0.03, Tested: "rate >= 0.8"}, {ID: "ok", Verdict: Inconclusive}}}
	rep := NewReport("f", ".flow/gates/x", Rule{MinSuccess: 0.8, Margin: 0.2, Alpha: 0.05, MaxTrials: 20}, nil, res)
	b, err := rep.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	c := doc.Suites[0].Cases
	if len(c) != 2 || c[0].Name != id || c[0].Failure == nil || !strings.Contains(c[0].Failure.Message, "0/5 successes") || c[1].Skipped == nil {
		t.Errorf("JUnit:\n%s", b)
	}
	if doc.Failures != 1 || doc.Skipped != 1 || doc.Tests != 2 {
		t.Errorf("counts: %+v", doc)
	}
	md := rep.Markdown()
	var rows int
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| task") {
			rows++
		}
	}
	if rows != 2 || !strings.Contains(md, `a<b>&"c\|d e`) {
		t.Errorf("Markdown:\n%s", md)
	}
	if rep.Verdict != Fail || rep.Exit != 1 {
		t.Errorf("verdict %s exit %d", rep.Verdict, rep.Exit)
	}
}
