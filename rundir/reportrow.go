package rundir

import (
	"html/template"
	"strconv"
	"strings"
)

// htmlEscaper escapes text and quoted attribute values as html/template
// does (its htmlReplacementTable), so that a row written here is the row
// the template would write.
var htmlEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// html writes one row of the report's table. The rows are written in Go,
// not by the page's template: executing the template cost about 15 µs a
// row, most of a 1,000-item map's report.html, where this costs a few
// (docs/performance.md). TestReportRowIsTheTemplatesRow holds the two to
// the same bytes.
func (r row) html() template.HTML {
	var b strings.Builder
	b.Grow(256 + len(r.Visit)*2 + len(r.Out) + len(r.Err) + len(r.Sent))
	w := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
	}
	esc := func(s string) { _, _ = htmlEscaper.WriteString(&b, s) }
	w(`<tr data-visit="`)
	esc(r.Visit)
	w(`" data-status="`)
	esc(r.Status)
	w(`"><td class="p"`)
	if r.Depth != 0 {
		w(` style="padding-left:`, strconv.Itoa(r.Depth), `em"`)
	}
	w(`>`)
	esc(r.Visit)
	w(`</td><td>`)
	esc(r.Kind)
	w(`</td><td><span class="status `)
	esc(r.Status)
	w(`">`)
	esc(r.Status)
	w(`</span></td><td>`)
	esc(r.Model)
	w(`</td><td class=n>`)
	esc(r.Tokens)
	w(`</td><td class=n>`)
	esc(r.Cost)
	w(`</td><td class=n>`)
	esc(r.Wall)
	w(`</td><td><div class=bar><span class="`)
	esc(r.Status)
	w(`" style="`)
	esc(string(r.Bar)) // numbers only (reportRow), as the template's CSS filter requires
	w(`"></span></div></td><td>`)
	if r.Sent != "" {
		w(`<div class=sent>`)
		esc(r.Sent)
		w(`</div>`)
	}
	if r.Err != "" {
		w(`<div class=err>`)
		esc(r.Err)
		w(`</div>`)
	}
	switch {
	case r.Long:
		w(`<details><summary>`, strconv.Itoa(len(r.Out)), ` characters</summary><pre>`)
		esc(r.Out)
		w(`</pre></details>`)
	case r.Out != "":
		w(`<pre>`)
		esc(r.Out)
		w(`</pre>`)
	}
	w("</td></tr>\n")
	return template.HTML(b.String()) // every value in it escaped above
}
