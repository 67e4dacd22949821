package engine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"time"
)

//go:embed report.css
var reportCSS string

// reportVisit is one row of report.html.
type reportVisit struct {
	Path   string
	Depth  int
	Kind   string
	Status string // ok, failed, skipped, running
	Model  string
	Tokens string
	Cost   string
	WallMS int64
	Output string
	Error  string
	Offset float64 // start, as a fraction of the run's wall time
	Width  float64 // duration, likewise
}

// WriteReport writes report.html into a run directory from its journal. The
// page is self-contained: no script, style sheet or font from elsewhere.
func WriteReport(dir string) error {
	info, err := Inspect(dir)
	if err != nil {
		return err
	}
	return renderReport(dir, info)
}

// renderReport writes the page. It is built with a strings.Builder and
// html.EscapeString rather than html/template: a run of thousands of
// visits renders in milliseconds, and every value is escaped in one place.
func renderReport(dir string, info *RunInfo) error {
	visits := reportVisits(info)
	var b strings.Builder
	b.Grow(4096 + 512*len(visits))
	e := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>flow run %s — %s — %s</title>\n<style>\n%s</style>\n</head>\n<body>\n",
		e(info.ID), e(info.Flow), e(info.Status), reportCSS)
	fmt.Fprintf(&b, "<h1>%s <span class=\"status %s\" id=\"run-status\">%s</span></h1>\n", e(info.Flow), e(info.Status), e(info.Status))
	fmt.Fprintf(&b, "<div class=\"meta\">run <code>%s</code> · started %s UTC · wall %s · tokens <b id=\"total-tokens\">%s</b> · cost <b id=\"total-cost\">%s</b> · %d visits · written %s</div>\n",
		e(info.ID), info.Started.UTC().Format("2006-01-02 15:04:05"), msText(info.WallMS), tokenText(info.Usage), costText(info.Usage),
		len(visits), time.Now().UTC().Format(time.RFC3339))
	if info.Failure != nil {
		root := info.Failure.Root()
		fmt.Fprintf(&b, "<div class=\"failure\" id=\"failure\"><b>Failed at <code>%s</code></b>: %s — %s</div>\n", e(root.Visit), e(string(root.Kind)), e(root.Message))
	}
	b.WriteString("<table id=\"visits\">\n<thead><tr><th>visit</th><th>kind</th><th>status</th><th>model</th><th class=\"num\">tokens</th><th class=\"num\">cost</th><th class=\"num\">wall</th><th>timeline</th><th>output</th></tr></thead>\n<tbody>\n")
	for _, v := range visits {
		fmt.Fprintf(&b, "<tr class=\"visit\" data-visit=\"%s\" data-status=\"%s\">\n<td class=\"path\" style=\"padding-left:%dem\">%s</td>\n<td>%s</td>\n<td><span class=\"status %s\">%s</span></td>\n<td>%s</td>\n<td class=\"num\">%s</td>\n<td class=\"num\">%s</td>\n<td class=\"num\">%s</td>\n",
			e(v.Path), v.Status, v.Depth, e(v.Path), e(v.Kind), v.Status, v.Status, e(v.Model), v.Tokens, v.Cost, msText(v.WallMS))
		fmt.Fprintf(&b, "<td><div class=\"bar\"><span class=\"%s\" style=\"left:%.2f%%;width:%.2f%%\"></span></div></td>\n<td>", v.Status, v.Offset*100, v.Width*100)
		if v.Error != "" {
			fmt.Fprintf(&b, "<div class=\"err\">%s</div>", e(v.Error))
		}
		switch {
		case len(v.Output) > 240 || strings.Count(v.Output, "\n") > 4:
			fmt.Fprintf(&b, "<details><summary>%d characters</summary><pre>%s</pre></details>", len(v.Output), e(v.Output))
		case v.Output != "":
			fmt.Fprintf(&b, "<pre>%s</pre>", e(v.Output))
		}
		b.WriteString("</td>\n</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n</body>\n</html>\n")
	tmp := filepath.Join(dir, ".report.html.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "report.html")); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

func msText(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
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
			v.Output = outputString(e.Output) // blocks record none: their children show it
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
