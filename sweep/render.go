package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowrun/flow/rundir"
)

// notReported stands wherever a driver reported nothing: never 0.
const notReported = "not reported"

// WriteReports rewrites report.md, report.csv, report.json and
// report.html from the sweep file as it is now.
func (s *Sweep) WriteReports() error {
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	r := Build(s.Snapshot())
	var errs []error
	for ext, render := range map[string]func(*Report) ([]byte, error){
		".md": markdown, ".csv": csvReport, ".json": jsonReport, ".html": htmlReport,
	} {
		b, err := render(r)
		if err == nil {
			err = writeAside(filepath.Join(s.dir, reportName+ext), b)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func jsonReport(r *Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}

// The texts of a row's fields, shared by every format but JSON.

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v*100, 'f', 1, 64) + "%"
}

func frac(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func tokens(v *int64, n int) string {
	switch {
	case n == 0:
		return "–"
	case v == nil:
		return notReported
	}
	return strconv.FormatInt(*v, 10)
}

func dollars(v *float64, n int) string {
	switch {
	case n == 0:
		return "–"
	case v == nil:
		return notReported
	}
	return fmt.Sprintf("$%.4f", *v)
}

func (r *Row) costPerSuccess() string {
	if r.NoSuccess {
		return "no success"
	}
	return dollars(r.CostPerSuccess, r.N)
}

func ms(v *float64) string {
	if v == nil {
		return "–"
	}
	return (time.Duration(*v) * time.Millisecond).Round(time.Millisecond).String()
}

func (r *Row) interval() string {
	if r.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s [%s, %s]", pct(r.SuccessRate), pct(r.WilsonLow), pct(r.WilsonHigh))
}

func (r *Row) failures() string {
	if len(r.Failures) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Failures)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Failures[k]))
	}
	return strings.Join(parts, ", ")
}

func (r *Row) vsBaseline() string {
	switch {
	case r.Baseline:
		return "baseline"
	case r.VsBaseline == nil || r.VsBaseline.Pairs == 0:
		return "no pairs"
	}
	c := r.VsBaseline
	return fmt.Sprintf("%dW %dL %dT, p = %.3f", c.Wins, c.Losses, c.Ties, c.P)
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

func (r *Report) perRun(v *float64) string {
	if v == nil {
		return "–"
	}
	switch r.Basis {
	case "cost":
		return fmt.Sprintf("$%.4f", *v)
	case "tokens":
		return fmt.Sprintf("%.0f tokens", *v)
	}
	return fmt.Sprintf("%.2fs", *v)
}

// columns are the main table's, in every format but JSON.
func (r *Report) columns() []string {
	k := strconv.Itoa(r.K)
	return []string{"assignment", "params", "n", "successes", "success (95% CI)", "mean score", "pass@" + k, "pass^" + k,
		"input", "output", "cache read", "cache write", "cost", "cost per success", r.Basis + " per run", "turns", "agent attempts",
		"wall p50", "wall p95", "failures", "empty answers", "vs baseline", "frontier", "pinned",
		"cache hit ratio", "re-runs", "quota"}
}

func (r *Report) cells(row *Row) []string {
	return []string{row.Assignment, row.Params, strconv.Itoa(row.N), strconv.Itoa(row.Successes), row.interval(),
		frac(row.MeanScore), frac(row.PassAtK), frac(row.PassHatK),
		tokens(row.Input, row.N), tokens(row.Output, row.N), tokens(row.CacheRead, row.N), tokens(row.CacheWrite, row.N),
		dollars(row.Cost, row.N), row.costPerSuccess(), r.perRun(row.PerRun), tokens(row.Turns, row.N), strconv.Itoa(row.Attempts),
		ms(row.WallP50), ms(row.WallP95), row.failures(), strconv.Itoa(row.Empty), row.vsBaseline(), yes(row.Frontier), yes(row.Pinned),
		frac(row.CacheHitRatio), strconv.Itoa(row.Reruns), strconv.Itoa(row.Quota)}
}

// csvReport is one line per assignment, then per assignment and
// parameter set when parameters are swept.
func csvReport(r *Report) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(r.columns())
	for _, rows := range [][]*Row{r.Assignments, r.ByParams} {
		for _, row := range rows {
			_ = w.Write(neutralised(r.cells(row)))
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// neutralised keeps a spreadsheet from taking a cell for a formula: a
// cell that starts with =, +, -, @ (or a tab or carriage return) and is not
// a plain number gets a leading '. A model named =HYPERLINK(…) stays text.
func neutralised(cells []string) []string {
	for i, c := range cells {
		if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
			continue
		}
		if _, err := strconv.ParseFloat(c, 64); err == nil {
			continue
		}
		cells[i] = "'" + c
	}
	return cells
}

func markdown(r *Report) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Sweep %s of %s\n\n", r.Sweep, r.Flow)
	fmt.Fprintf(&b, "%s. Success: %s. Baseline: %s. Updated %s.\n\n", r.Cells.text(), r.Success, r.Baseline, r.Updated.Format(time.RFC3339))
	fmt.Fprintf(&b, "Spent: %s tokens, cost %s.\n\n", rundir.TokensText(r.Spent), rundir.CostText(r.Spent))
	for _, o := range r.Overspend {
		fmt.Fprintf(&b, "**Overspent:** %s.\n\n", o.String())
	}
	table(&b, r.columns(), rowsOf(r, r.Assignments))
	if r.Pin != nil {
		fmt.Fprintf(&b, "\nChosen (`flow pin %s` writes it into the flow): **%s** — %s.\n", r.Sweep, r.Pin.Assignment, r.Pin.Reason)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(&b, "> **Warning:** %s.\n", w)
		}
	}
	if len(r.ByParams) > 0 {
		b.WriteString("\n## By parameters\n\n")
		table(&b, r.columns(), rowsOf(r, r.ByParams))
	}
	providers(&b, r)
	b.WriteString("\n## Per task\n\n")
	var tasks [][]string
	for _, t := range r.Tasks {
		tasks = append(tasks, t.cells())
	}
	table(&b, taskColumns, tasks)
	b.WriteString("\n## Per node\n\n")
	var nodes [][]string
	for _, n := range r.Nodes {
		nodes = append(nodes, n.cells())
	}
	table(&b, nodeColumns, nodes)
	fmt.Fprintf(&b, "\nCost is in USD per the drivers' reports; %q marks what a driver did not report. "+
		"pass@k and pass^k are the unbiased estimates over tasks with at least k ended runs; the interval is Wilson's at 95%%; "+
		"the comparison pairs runs of the same task, parameters and repetition (exact McNemar p).\n", notReported)
	return b.Bytes(), nil
}

func rowsOf(r *Report, rows []*Row) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = r.cells(row)
	}
	return out
}

var nodeColumns = []string{"assignment", "node", "agent", "model", "visits", "failures", "tokens", "cost", "most"}

func (n *NodeRow) cells() []string {
	most := []string{}
	if n.FailsMost {
		most = append(most, "fails most")
	}
	if n.CostsMost {
		most = append(most, "costs most")
	}
	tok, cost := "–", "–"
	if n.Kind == "agent" {
		tok, cost = tokens(n.Tokens, n.Visits), dollars(n.Cost, n.Visits)
	}
	return []string{n.Assignment, n.Node, n.Agent, n.Model, strconv.Itoa(n.Visits), strconv.Itoa(n.Failures), tok, cost, strings.Join(most, ", ")}
}

func (c Counts) text() string {
	s := fmt.Sprintf("%d of %d cells ended (%d succeeded, %d failed)", c.Succeeded+c.Failed, c.Total, c.Succeeded, c.Failed)
	for _, x := range []struct {
		n    int
		what string
	}{{c.Stopped, "stopped"}, {c.Skipped, "skipped by the budget"}, {c.SetAside, c.SetAsideText()}, {c.Quota, "ended on a quota, not scored"}, {c.NotRun, "not run"}} {
		if x.n > 0 {
			s += fmt.Sprintf(", %d %s", x.n, x.what)
		}
	}
	return s
}

// table writes a Markdown table; a | in a cell is escaped.
func table(b *bytes.Buffer, head []string, rows [][]string) {
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
}
