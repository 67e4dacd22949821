package gate

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
)

// Report is the gate's JSON (flow gate --json, and gate.json in the
// candidate's sweep directory).
type Report struct {
	Flow       string  `json:"flow"`
	Sweep      string  `json:"sweep"` // the candidate's trials: a sweep directory
	Mode       string  `json:"mode"`  // "min-success" or "baseline"
	MinSuccess float64 `json:"min_success,omitempty"`
	// Baseline names the baseline sweep and assignment, and how its
	// samples were had: "recorded" (--reuse) or "fresh".
	Baseline  *BaselineInfo `json:"baseline,omitempty"`
	Margin    float64       `json:"margin"`
	Alpha     float64       `json:"alpha"`
	MaxTrials int           `json:"max_trials"`
	Verdict   Verdict       `json:"verdict"` // FAIL if any, else INCONCLUSIVE if any, else PASS
	Exit      int           `json:"exit"`
	*Result
}

// BaselineInfo says what the baseline was.
type BaselineInfo struct {
	Sweep      string `json:"sweep"`
	Assignment string `json:"assignment"`
	Samples    string `json:"samples"`
}

// NewReport puts a result with what produced it.
func NewReport(flow, sweepDir string, rule Rule, b *Baseline, res *Result) *Report {
	r := &Report{Flow: flow, Sweep: sweepDir, Mode: "min-success", MinSuccess: rule.MinSuccess, Margin: rule.Margin, Alpha: rule.Alpha,
		MaxTrials: rule.MaxTrials, Exit: res.Exit(), Result: res}
	if b != nil {
		r.Mode, r.MinSuccess = "baseline", 0
		r.Baseline = &BaselineInfo{Sweep: b.Sweep, Assignment: b.Assignment, Samples: "recorded"}
		if b.Fresh != nil {
			r.Baseline.Samples = "fresh"
		}
	}
	r.Verdict = map[int]Verdict{0: Pass, 1: Fail, 3: Inconclusive}[r.Exit]
	return r
}

// JSON is the report as indented JSON.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// Line is the line said of a task as it is decided.
func (t Task) Line() string {
	return fmt.Sprintf("%s %s: %s", t.Verdict, t.ID, t.Evidence())
}

// Evidence is the counts and the interval behind a verdict, in words.
func (t Task) Evidence() string {
	s := fmt.Sprintf("%d/%d successes (rate %.2f, 95%% interval %.2f–%.2f), p = %.3g against %s",
		t.Successes, t.Trials, t.Rate, t.Interval[0], t.Interval[1], t.PValue, t.Tested)
	if t.BaselineTrials > 0 {
		s += fmt.Sprintf("; baseline %d/%d", t.BaselineSuccesses, t.BaselineTrials)
	}
	return s
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit is the report as JUnit XML: one testcase per task, a failure for
// FAIL and a skip for INCONCLUSIVE, each message with the counts and the
// interval.
func (r *Report) JUnit() ([]byte, error) {
	suite := junitSuite{Name: "flow gate " + r.Flow}
	for _, t := range r.Tasks {
		c := junitCase{Name: t.ID, Classname: "flow.gate." + r.Flow, SystemOut: t.Line()}
		msg := &junitMessage{Message: string(t.Verdict) + ": " + t.Evidence(), Type: string(t.Verdict), Text: r.rule()}
		switch t.Verdict {
		case Fail:
			c.Failure = msg
			suite.Failures++
		case Inconclusive, Open:
			c.Skipped = msg
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
	}
	out := junitSuites{Name: suite.Name, Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// rule says what the gate tested, in words.
func (r *Report) rule() string {
	bar := fmt.Sprintf("success rate at least %g", r.MinSuccess)
	if r.Baseline != nil {
		bar = fmt.Sprintf("not worse than baseline %s (%s, %s runs)", r.Baseline.Sweep, r.Baseline.Assignment, r.Baseline.Samples)
	}
	return fmt.Sprintf("%s; margin %g, alpha %g, at most %d trials a task", bar, r.Margin, r.Alpha, r.MaxTrials)
}

// Markdown is the report as a Markdown summary (for $GITHUB_STEP_SUMMARY).
func (r *Report) Markdown() string {
	var b strings.Builder
	icon := map[Verdict]string{Pass: "✅", Fail: "❌", Inconclusive: "❔"}
	fmt.Fprintf(&b, "### flow gate %s: %s %s\n\n", md(r.Flow), icon[r.Verdict], r.Verdict)
	fmt.Fprintf(&b, "%s.\n\n", md(r.rule()))
	if r.Baseline != nil {
		b.WriteString("| task | verdict | successes | rate | 95% interval | p | tested | baseline |\n|---|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| task | verdict | successes | rate | 95% interval | p | tested |\n|---|---|---|---|---|---|---|\n")
	}
	for _, t := range r.Tasks {
		fmt.Fprintf(&b, "| %s | %s %s | %d/%d | %.2f | %.2f–%.2f | %.3g | %s |", md(t.ID), icon[t.Verdict], t.Verdict, t.Successes, t.Trials,
			t.Rate, t.Interval[0], t.Interval[1], t.PValue, md(t.Tested))
		if r.Baseline != nil {
			fmt.Fprintf(&b, " %d/%d |", t.BaselineSuccesses, t.BaselineTrials)
		}
		b.WriteString("\n")
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "\n%s\n", md(r.Note))
	}
	fmt.Fprintf(&b, "\nTrials: `%s`\n", strings.ReplaceAll(r.Sweep, "`", "'"))
	return b.String()
}

// md keeps a name from breaking the table: pipes escaped, one line.
func md(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}
