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

	"github.com/sourcegraph/conc"
)

//go:embed report.css
var reportCSS string

// WriteReport writes report.html into a run directory from its journal. The
// page is self-contained: no script, style sheet or font from elsewhere.
func WriteReport(dir string) error {
	info, err := Inspect(dir)
	if err != nil {
		return err
	}
	_, visits := records(pointers(info.Facts))
	rows := make([]reportRow, len(visits))
	for i, v := range visits {
		rows[i] = v.reportRow()
	}
	return renderReport(dir, info, rows)
}

// reportRow is a visit as report.html shows it: when it started, where,
// and its end fact, if it ended.
type reportRow struct {
	start      time.Time
	path, kind string
	end        *Fact
}

func (v Visit) reportRow() reportRow {
	return reportRow{start: v.Start.Time, path: v.Start.Visit, kind: v.Start.Kind, end: v.End}
}

// renderReport writes the page. It is appended into byte slices with
// every value escaped by appendHTML — no templates, no per-row formatting —
// so that a run of thousands of visits renders in a few milliseconds: its
// rows in parallel, reportChunk at a time, when there are many.
func renderReport(dir string, info *RunInfo, record []reportRow) error {
	b := make([]byte, 0, len(reportCSS)+4096)
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
		"</b> · ", strconv.Itoa(len(record)), " visits · written ", time.Now().UTC().Format(time.RFC3339), "</div>\n")
	if info.Failure != nil {
		root := info.Failure.Root()
		text("<div class=\"failure\" id=\"failure\"><b>Failed at <code>")
		esc(root.Visit)
		text("</code></b>: ", string(root.Kind), " — ")
		esc(root.Message)
		text("</div>\n")
	}
	text("<table id=\"visits\">\n<thead><tr><th>visit</th><th>kind</th><th>status</th><th>model</th><th class=n>tokens</th><th class=n>cost</th><th class=n>wall</th><th>timeline</th><th>output</th></tr></thead>\n<tbody>\n")
	rows := renderRows(record, reportFrame{start: info.Started, total: float64(max(info.WallMS, 1)), now: time.Now()})
	parts := make([][]byte, 0, len(rows)+2)
	parts = append(parts, b)
	for _, r := range rows {
		parts = append(parts, *r)
	}
	parts = append(parts, []byte("</tbody>\n</table>\n</body>\n</html>\n"))
	err := writeAside(filepath.Join(dir, "report.html"), func(f *os.File) error {
		for _, p := range parts {
			if _, err := f.Write(p); err != nil {
				return err
			}
		}
		return nil
	})
	for _, r := range rows {
		*r = (*r)[:0]
		if cap(*r) <= 4*writeBuffer {
			writeBuffers.Put(r)
		}
	}
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// reportChunk is how many rows one goroutine renders: about a
// writeBuffer of them, into a buffer from that pool. A row takes under a
// microsecond; a chunk is long enough to be worth a goroutine.
const reportChunk = 200

// reportFrame is what places a row on the timeline: the run's start and
// wall time, and now, for visits still running.
type reportFrame struct {
	start time.Time
	total float64 // the run's wall time in milliseconds, at least 1
	now   time.Time
}

// renderRows renders the rows of record, in order, reportChunk at a time:
// the chunks after the first on goroutines of their own.
func renderRows(record []reportRow, fr reportFrame) []*[]byte {
	chunks := make([]*[]byte, (len(record)+reportChunk-1)/reportChunk)
	render := func(i int) {
		rows := record[i*reportChunk : min((i+1)*reportChunk, len(record))]
		buf := writeBuffers.Get().(*[]byte)
		b := (*buf)[:0]
		var scratch []byte
		for _, rec := range rows {
			b, scratch = appendReportRow(b, scratch, rec, fr)
		}
		*buf = b
		chunks[i] = buf
	}
	var wg conc.WaitGroup
	for i := 1; i < len(chunks); i++ {
		wg.Go(func() { render(i) })
	}
	if len(chunks) > 0 {
		render(0)
	}
	wg.Wait()
	return chunks
}

// Row parts that depend only on a visit's status, whole.
var (
	rowStatus = map[string][3]string{}
	statuses  = []string{"ok", "failed", "skipped", "running"}
)

func init() {
	for _, st := range statuses {
		rowStatus[st] = [3]string{
			"\" data-status=\"" + st + "\"><td class=p",
			"<td><span class=\"status " + st + "\">" + st + "</span><td>",
			"<td><div class=bar><span class=" + st + " style=\"left:",
		}
	}
}

// appendReportRow appends one visit's row. Optional end tags are left out
// and attribute values unquoted where HTML allows: a run of thousands of
// visits writes this page at its end.
func appendReportRow(b, scratch []byte, rec reportRow, fr reportFrame) ([]byte, []byte) {
	e, path := rec.end, rec.path
	status, wall := "running", int64(0)
	var errText, out string
	var value any
	if e != nil {
		wall = e.WallMS
		switch {
		case e.OK != nil && *e.OK && e.Skipped:
			status = "skipped"
		case e.OK != nil && *e.OK:
			status = "ok"
		default:
			status = "failed"
			if e.Error != nil {
				root := e.Error.Root()
				errText = string(e.Error.Kind) + ": " + root.Message
				if e.Error.Kind == "child" {
					errText = "child: " + root.Visit + " failed"
				}
			}
		}
		// Blocks record no output: their children show it.
		if str, ok := e.Output.(string); ok {
			out = str
		} else {
			value = e.Output
		}
	} else {
		wall = fr.now.Sub(rec.start).Milliseconds()
	}
	parts := rowStatus[status]
	b = append(b, "<tr data-visit=\""...)
	b = appendHTML(b, path)
	b = append(b, parts[0]...)
	if depth := strings.Count(path, "/"); depth > 0 {
		b = append(b, " style=\"padding-left:"...)
		b = strconv.AppendInt(b, int64(depth), 10)
		b = append(b, "em\""...)
	}
	b = append(b, '>')
	b = appendHTML(b, path)
	b = append(b, "<td>"...)
	b = append(b, rec.kind...)
	b = append(b, parts[1]...)
	if e != nil {
		b = appendHTML(b, e.Model)
	}
	b = append(b, "<td class=n>"...)
	if e != nil && e.Usage != nil {
		b = appendTokens(b, *e.Usage)
		b = append(b, "<td class=n>"...)
		b = appendCost(b, *e.Usage)
	} else {
		b = append(b, "<td class=n>"...)
	}
	b = append(b, "<td class=n>"...)
	b = appendMS(b, wall)
	b = append(b, parts[2]...)
	b = appendPercent(b, float64(rec.start.Sub(fr.start).Milliseconds())/fr.total)
	b = append(b, "%;width:"...)
	b = appendPercent(b, max(float64(wall)/fr.total, 0.002))
	b = append(b, "%\"></span></div><td>"...)
	if errText != "" {
		b = append(b, "<div class=err>"...)
		b = appendHTML(b, errText)
		b = append(b, "</div>"...)
	}
	if out == "" && value != nil {
		scratch = displayJSON(scratch[:0], value)
		out = string(scratch)
	}
	switch {
	case len(out) > 240 || strings.Count(out, "\n") > 4:
		b = append(b, "<details><summary>"...)
		b = strconv.AppendInt(b, int64(len(out)), 10)
		b = append(b, " characters</summary><pre>"...)
		b = appendHTML(b, out)
		b = append(b, "</pre></details>"...)
	case out != "":
		b = append(b, "<pre>"...)
		b = appendHTML(b, out)
		b = append(b, "</pre>"...)
	}
	return append(b, "</tr>\n"...), scratch
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

func tokenText(u Usage) string { return string(appendTokens(nil, u)) }

func appendTokens(b []byte, u Usage) []byte {
	if u.Input == nil && u.Output == nil {
		return append(b, "—"...)
	}
	return strconv.AppendInt(b, u.Tokens(), 10)
}

func costText(u Usage) string { return string(appendCost(nil, u)) }

// appendCost appends a cost in dollars to four places, as fmt's %.4f.
func appendCost(b []byte, u Usage) []byte {
	if u.Cost == nil {
		return append(b, "—"...)
	}
	return strconv.AppendFloat(append(b, '$'), *u.Cost, 'f', 4, 64)
}
