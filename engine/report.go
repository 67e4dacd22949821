package engine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var reportTemplate string

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":  func(ms int64) string { return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String() },
	"pct": func(f float64) string { return fmt.Sprintf("%.2f%%", f*100) },
}).Parse(reportTemplate))

// reportVisit is one row of report.html.
type reportVisit struct {
	Path    string
	Depth   int
	Kind    string
	Status  string // ok, failed, skipped, running
	Model   string
	Tokens  string
	Cost    string
	WallMS  int64
	Output  string
	Long    bool
	Error   string
	Offset  float64 // start, as a fraction of the run's wall time
	Width   float64 // duration, likewise
	Replays int
}

type reportData struct {
	Info    *RunInfo
	Tokens  string
	Cost    string
	Failure *Failure
	Visits  []reportVisit
	Written string
}

// WriteReport writes report.html into a run directory from its journal. The
// page is self-contained: no script, style sheet or font from elsewhere.
func WriteReport(dir string) error {
	info, err := Inspect(dir)
	if err != nil {
		return err
	}
	d := &reportData{Info: info, Tokens: tokenText(info.Usage), Cost: costText(info.Usage), Written: time.Now().UTC().Format(time.RFC3339)}
	if info.Failure != nil {
		d.Failure = info.Failure.Root()
	}
	d.Visits = reportVisits(info)
	var b bytes.Buffer
	if err := reportPage.Execute(&b, d); err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	tmp := filepath.Join(dir, ".report.html.tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, "report.html"))
}

func reportVisits(info *RunInfo) []reportVisit {
	type span struct{ start, end time.Time }
	var order []string
	starts := map[string]*Fact{}
	ends := map[string]*Fact{}
	for i := range info.Facts {
		f := &info.Facts[i]
		switch f.Type {
		case "start":
			if starts[f.Visit] == nil {
				order = append(order, f.Visit)
			}
			starts[f.Visit] = f
		case "end":
			ends[f.Visit] = f
		}
	}
	runStart := info.Started
	total := float64(max(info.WallMS, 1))
	out := make([]reportVisit, 0, len(order))
	for _, p := range order {
		s := starts[p]
		v := reportVisit{Path: p, Depth: strings.Count(p, "/"), Kind: s.Kind, Status: "running"}
		v.Offset = float64(s.Time.Sub(runStart).Milliseconds()) / total
		if e := ends[p]; e != nil {
			v.WallMS, v.Model = e.WallMS, e.Model
			switch {
			case e.OK != nil && *e.OK && e.Skipped:
				v.Status = "skipped"
			case e.OK != nil && *e.OK:
				v.Status = "ok"
			default:
				v.Status = "failed"
				if e.Error != nil {
					v.Error = fmt.Sprintf("%s: %s", e.Error.Kind, e.Error.Root().Message)
					if e.Error.Kind == "child" {
						v.Error = "child: " + e.Error.Root().Visit + " failed"
					}
				}
			}
			if e.Usage != nil {
				v.Tokens, v.Cost = tokenText(*e.Usage), costText(*e.Usage)
			}
			v.Output = outputString(e.Output)
			v.Long = len(v.Output) > 240 || strings.Count(v.Output, "\n") > 4
		} else {
			v.WallMS = time.Since(s.Time).Milliseconds()
		}
		v.Width = max(float64(v.WallMS)/total, 0.002)
		out = append(out, v)
	}
	return out
}

func outputString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the template escapes; JSON's \u003c would only hide the text
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(b.String(), "\n")
}

func tokenText(u Usage) string {
	if u.Input == nil && u.Output == nil {
		return "—"
	}
	return fmt.Sprint(u.Tokens())
}

func costText(u Usage) string {
	if u.Cost == nil {
		return "—"
	}
	return fmt.Sprintf("$%.4f", *u.Cost)
}
