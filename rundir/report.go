package rundir

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/schema"
)

var (
	//go:embed report.css
	reportCSS string
	//go:embed report.html.tmpl
	reportSource string
	// reportPage is parsed on first use, not when every flow command
	// starts (docs/performance.md, start-up).
	reportPage = sync.OnceValue(func() *template.Template { return template.Must(template.New("report").Parse(reportSource)) })
)

// WriteReport writes report.html into the run directory dir from its
// journal: `flow show` brings the page of a run whose engine died up to
// date. The page is self-contained: no script, style sheet or font from
// elsewhere.
func WriteReport(dir string) error {
	info, err := Inspect(dir)
	if err != nil {
		return err
	}
	return writeReport(dir, info, info.Facts, secret.New(secret.FromEnviron(os.Environ())...))
}

// page is what the report template shows.
type page struct {
	Info                                 *RunInfo
	CSS                                  template.CSS
	Root                                 *record.Failure
	Started, Wall, Tokens, Cost, Written string
	Visits                               int
	// Reused counts the visits answered from a recording; SavedTokens
	// and SavedCost are what they had spent when they ran.
	Reused                 int
	SavedTokens, SavedCost string
	// Rows makes each row as the page is written: a run of thousands of
	// visits never holds them all.
	Rows iter.Seq[template.HTML]
}

// row is one visit of the report.
type row struct {
	Visit, Kind, Status, Model, Tokens, Cost, Wall, Err, Sent, Out string
	Bar                                                            template.CSS // the timeline bar's place: made here, of numbers only
	Depth                                                          int
	Long                                                           bool
}

func writeReport(dir string, info *RunInfo, facts []*record.Fact, secrets *secret.Redactor) error {
	now := time.Now()
	p := &page{Info: info, CSS: template.CSS(reportCSS), Started: info.Started.UTC().Format("2006-01-02 15:04:05"),
		Wall: msText(info.WallMS), Tokens: TokensText(info.Usage), Cost: CostText(info.Usage), Written: now.UTC().Format(time.RFC3339)}
	if info.Failure != nil {
		p.Root = info.Failure.Root()
	}
	if sv := Saved(facts); sv.Visits > 0 {
		p.Reused, p.SavedTokens, p.SavedCost = sv.Visits, TokensText(sv.Usage), CostText(sv.Usage)
	}
	total := float64(max(info.WallMS, 1))
	visits := Visits(facts)
	p.Visits = len(visits)
	trees := DelegationTotals(facts)
	p.Rows = func(yield func(template.HTML) bool) {
		for _, v := range visits {
			r := reportRow(v, info.Started, total, now)
			if u, ok := trees[v.Start.Visit]; ok {
				r.Tokens += " (" + TokensText(u) + " with its delegates)"
			}
			if !yield(r.html()) {
				return
			}
		}
	}
	err := writeAside(filepath.Join(dir, reportFile), secrets, func(bw *bufio.Writer) error {
		return reportPage().Execute(bw, p)
	})
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

func reportRow(v Visit, runStart time.Time, total float64, now time.Time) row {
	r := row{Visit: v.Start.Visit, Kind: string(v.Start.Kind), Status: "running", Depth: strings.Count(v.Start.Visit, "/")}
	wall := now.Sub(v.Start.Time).Milliseconds()
	if e := v.End; e != nil {
		wall = e.WallMS
		r.Status, r.Err = outcome(e)
		r.Model = e.Model
		if e.Usage != nil {
			r.Tokens, r.Cost = TokensText(*e.Usage), CostText(*e.Usage)
		}
		r.Out = displayText(e.Output) // blocks record no output: their children show it
		r.Sent = SentText(e)
		if e.Reused != nil {
			r.Status = "reused"
			r.Err = "reused from run " + e.Reused.Run + ", visit " + e.Reused.Visit
		}
	}
	r.Wall = msText(wall)
	left := float64(v.Start.Time.Sub(runStart).Milliseconds()) / total * 100
	r.Bar = template.CSS(fmt.Sprintf("left:%.2f%%;width:%.2f%%", left, max(float64(wall)/total, 0.002)*100))
	r.Long = len(r.Out) > 240 || strings.Count(r.Out, "\n") > 4
	return r
}

// outcome is an ended visit's status word, and its error as one line.
func outcome(e *record.Fact) (status, errText string) {
	switch {
	case e.Succeeded() && e.Skipped:
		return "skipped", ""
	case e.Succeeded():
		return "ok", ""
	case e.Error == nil:
		return "failed", ""
	case e.Error.Kind == schema.FailChild:
		return "failed", "child: " + e.Error.Root().Visit + " failed"
	}
	return "failed", string(e.Error.Kind) + ": " + e.Error.Root().Message
}

// displayText shows an output for reading: text as it is, other values
// as compact JSON.
func displayText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the page escapes it
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func msText(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// TokensText shows a usage's tokens, or "—" when no agent reported any,
// and says when some turn's figure is partial (it ended before its
// provider's final figure came: docs/run-directory.md#usagejson).
func TokensText(u record.Usage) string {
	s := fmt.Sprint(u.Tokens())
	if u.Input == nil && u.Output == nil && u.CacheRead == nil && u.CacheWrite == nil {
		s = "—"
	}
	if u.Partial {
		s += " (partial)"
	}
	return s
}

// CostText shows a usage's cost in dollars, or "—" when none was reported.
func CostText(u record.Usage) string {
	if u.Cost == nil {
		return "—"
	}
	return fmt.Sprintf("$%.4f", *u.Cost)
}
