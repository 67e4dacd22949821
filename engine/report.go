package engine

import (
	"bytes"
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
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
	Usage  *Usage // nil: none recorded
	WallMS int64
	Output string // a text output
	Value  any    // any other output, rendered as JSON
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
	_, visits := records(pointers(info.Facts))
	return renderReport(dir, info, visits)
}

// renderReport writes the page. It is appended into one byte slice with
// every value escaped by appendHTML — no templates, no per-row formatting —
// so that a run of thousands of visits renders in a few milliseconds.
func renderReport(dir string, info *RunInfo, record []Visit) error {
	visits := reportVisits(info, record)
	b := make([]byte, 0, len(reportCSS)+2048+320*len(visits))
	text := func(parts ...string) {
		for _, p := range parts {
			b = append(b, p...)
		}
	}
	esc := func(s string) { b = appendHTML(b, s) }
	text("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>flow run ")
	esc(info.ID)
	text(" — ")
	esc(info.Flow)
	text(" — ", info.Status, "</title>\n<style>\n", reportCSS, "</style>\n</head>\n<body>\n<h1>")
	esc(info.Flow)
	text(" <span class=\"status ", info.Status, "\" id=\"run-status\">", info.Status, "</span></h1>\n<div class=\"meta\">run <code>")
	esc(info.ID)
	text("</code> · started ", info.Started.UTC().Format("2006-01-02 15:04:05"), " UTC · wall ", msText(info.WallMS),
		" · tokens <b id=\"total-tokens\">", tokenText(info.Usage), "</b> · cost <b id=\"total-cost\">", costText(info.Usage),
		"</b> · ", strconv.Itoa(len(visits)), " visits · written ", time.Now().UTC().Format(time.RFC3339), "</div>\n")
	if info.Failure != nil {
		root := info.Failure.Root()
		text("<div class=\"failure\" id=\"failure\"><b>Failed at <code>")
		esc(root.Visit)
		text("</code></b>: ", string(root.Kind), " — ")
		esc(root.Message)
		text("</div>\n")
	}
	text("<table id=\"visits\">\n<thead><tr><th>visit</th><th>kind</th><th>status</th><th>model</th><th class=n>tokens</th><th class=n>cost</th><th class=n>wall</th><th>timeline</th><th>output</th></tr></thead>\n<tbody>\n")
	// Rows are written compact (optional end tags left out, attribute
	// values unquoted where HTML allows): a run of thousands of visits
	// writes this page at its end.
	var scratch []byte
	for _, v := range visits {
		text("<tr data-visit=\"")
		esc(v.Path)
		text("\" data-status=\"", v.Status, "\"><td class=p")
		if v.Depth > 0 {
			text(" style=\"padding-left:", strconv.Itoa(v.Depth), "em\"")
		}
		b = append(b, '>')
		esc(v.Path)
		text("<td>", v.Kind, "<td><span class=\"status ", v.Status, "\">", v.Status, "</span><td>")
		esc(v.Model)
		text("<td class=n>")
		if v.Usage != nil {
			text(tokenText(*v.Usage), "<td class=n>", costText(*v.Usage))
		} else {
			text("<td class=n>")
		}
		text("<td class=n>")
		b = appendMS(b, v.WallMS)
		text("<td><div class=bar><span class=", v.Status, " style=\"left:")
		b = appendPercent(b, v.Offset)
		text("%;width:")
		b = appendPercent(b, v.Width)
		text("%\"></span></div><td>")
		if v.Error != "" {
			text("<div class=err>")
			esc(v.Error)
			text("</div>")
		}
		out := v.Output
		if out == "" && v.Value != nil {
			scratch = displayJSON(scratch[:0], v.Value)
			out = string(scratch)
		}
		switch {
		case len(out) > 240 || strings.Count(out, "\n") > 4:
			text("<details><summary>", strconv.Itoa(len(out)), " characters</summary><pre>")
			esc(out)
			text("</pre></details>")
		case out != "":
			text("<pre>")
			esc(out)
			text("</pre>")
		}
		text("</tr>\n")
	}
	text("</tbody>\n</table>\n</body>\n</html>\n")
	tmp := filepath.Join(dir, ".report.html.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "report.html")); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// appendHTML appends s escaped for HTML text and attribute values.
func appendHTML(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var rep string
		switch s[i] {
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		case '&':
			rep = "&amp;"
		case '"':
			rep = "&#34;"
		case '\'':
			rep = "&#39;"
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, rep...)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// displayJSON renders a value as compact JSON for reading: <, > and & are
// shown as they are (the page escapes them), not as \u003c and friends.
func displayJSON(b []byte, v any) []byte {
	start := len(b)
	b, err := appendAny(b, v)
	if err != nil {
		return append(b[:start], fmt.Sprint(v)...)
	}
	out := b[start:]
	if !bytes.Contains(out, []byte(`\u00`)) {
		return b
	}
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(out))
	return append(b[:start], r...)
}

// appendPercent appends f (a fraction) as a percentage with two decimals.
func appendPercent(b []byte, f float64) []byte {
	v := int64(math.Round(f * 10000))
	if v < 0 {
		b, v = append(b, '-'), -v
	}
	b = strconv.AppendInt(b, v/100, 10)
	return append(b, '.', byte('0'+v/10%10), byte('0'+v%10))
}

func msText(ms int64) string { return string(appendMS(nil, ms)) }

// appendMS appends ms milliseconds as time.Duration's String does, without
// making a string: a report row has one.
func appendMS(b []byte, ms int64) []byte {
	switch {
	case ms < 0:
		return append(b, (time.Duration(ms) * time.Millisecond).String()...)
	case ms == 0:
		return append(b, "0s"...)
	case ms < 1000:
		return append(strconv.AppendInt(b, ms, 10), "ms"...)
	}
	h, m, sec, frac := ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000
	if h > 0 {
		b = append(strconv.AppendInt(b, h, 10), 'h')
	}
	if h > 0 || m > 0 {
		b = append(strconv.AppendInt(b, m, 10), 'm')
	}
	b = strconv.AppendInt(b, sec, 10)
	if frac > 0 {
		digits := []byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		for digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
		}
		b = append(b, digits...)
	}
	return append(b, 's')
}

func reportVisits(info *RunInfo, record []Visit) []reportVisit {
	runStart := info.Started
	total := float64(max(info.WallMS, 1))
	out := make([]reportVisit, 0, len(record))
	for _, rec := range record {
		s, p := rec.Start, rec.Start.Visit
		v := reportVisit{Path: p, Depth: strings.Count(p, "/"), Kind: s.Kind, Status: "running"}
		v.Offset = float64(s.Time.Sub(runStart).Milliseconds()) / total
		if e := rec.End; e != nil {
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
			v.Usage = e.Usage
			// Blocks record no output: their children show it.
			if str, ok := e.Output.(string); ok {
				v.Output = str
			} else {
				v.Value = e.Output
			}
		} else {
			v.WallMS = time.Since(s.Time).Milliseconds()
		}
		v.Width = max(float64(v.WallMS)/total, 0.002)
		out = append(out, v)
	}
	return out
}

func tokenText(u Usage) string {
	if u.Input == nil && u.Output == nil {
		return "—"
	}
	return strconv.FormatInt(u.Tokens(), 10)
}

func costText(u Usage) string {
	if u.Cost == nil {
		return "—"
	}
	return fmt.Sprintf("$%.4f", *u.Cost)
}
