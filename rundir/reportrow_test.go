package rundir

import (
	"html/template"
	"strings"
	"testing"
)

// templateRow is the table row report.html.tmpl wrote before rows were
// written in Go (row.html); the two must give the same bytes.
var templateRow = template.Must(template.New("row").Parse(`<table><tbody>{{range .}}<tr data-visit="{{.Visit}}" data-status="{{.Status}}"><td class="p"{{if .Depth}} style="padding-left:{{.Depth}}em"{{end}}>{{.Visit}}</td><td>{{.Kind}}</td><td><span class="status {{.Status}}">{{.Status}}</span></td><td>{{.Model}}</td><td class=n>{{.Tokens}}</td><td class=n>{{.Cost}}</td><td class=n>{{.Wall}}</td><td><div class=bar><span class="{{.Status}}" style="{{.Bar}}"></span></div></td><td>{{with .Sent}}<div class=sent>{{.}}</div>{{end}}{{with .Err}}<div class=err>{{.}}</div>{{end}}{{if .Long}}<details><summary>{{len .Out}} characters</summary><pre>{{.Out}}</pre></details>{{else if .Out}}<pre>{{.Out}}</pre>{{end}}</td></tr>
{{end}}</tbody></table>`))

func TestReportRowIsTheTemplatesRow(t *testing.T) {
	hostile := "<script>alert('x&y')</script> \"q\" a+b \x00 \xff\xfe é \ufdd0 \ufffe `tick` ${{ x }} </pre>"
	rows := []row{
		{Visit: "a", Kind: "run", Status: "ok", Wall: "1ms", Bar: "left:0.00%;width:0.20%"},
		{Visit: "each[1]/work", Kind: "agent", Status: "failed", Model: "m", Tokens: "12", Cost: "$0.0100", Wall: "2s", Depth: 1,
			Bar: "left:12.50%;width:50.00%", Err: hostile, Sent: hostile, Out: hostile},
		{Visit: hostile, Kind: hostile, Status: hostile, Model: hostile, Tokens: hostile, Cost: hostile, Wall: hostile, Depth: 3,
			Bar: "left:1.00%;width:2.00%", Out: strings.Repeat(hostile+"\n", 10), Long: true},
		{Visit: "r", Status: "running", Out: "", Err: ""},
	}
	var want strings.Builder
	if err := templateRow.Execute(&want, rows); err != nil {
		t.Fatal(err)
	}
	got := "<table><tbody>"
	for _, r := range rows {
		got += string(r.html())
	}
	got += "</tbody></table>"
	if got != want.String() {
		t.Errorf("row.html:\n%s\nthe template:\n%s", got, want.String())
	}
}
