package transcript

import (
	"fmt"
	"html/template"
	"sync"

	"github.com/flowrun/flow/engine/record"
)

type pageData struct {
	Agent string
	Turns []Turn
}

// page is the readable transcript: self-contained (no scripts, no links
// out), every text escaped by html/template. It is parsed when first used,
// not when flow starts: most flow commands write no transcript.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"usage":   usageText,
		"oneLine": oneLine,
		"inc":     func(i int) int { return i + 1 },
	}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Agent}} — transcript</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f6f6f6;padding:.6em;border-radius:4px;margin:.3em 0}
.meta{color:#666;font-size:.9em}.completed{color:#176f2c}.failed,.aborted{color:#b00020}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
.step{border-left:3px solid #ddd;padding-left:.6em;margin:.5em 0}.tool{border-color:#6a8cd6}.result{border-color:#9bb}.error{border-color:#b00020}.thinking{border-color:#ccc;color:#555}
</style></head><body>
<h1>{{.Agent}}</h1>
<p class="meta">{{len .Turns}} turn(s)</p>
{{range $i, $t := .Turns}}
<section>
<h2>Turn {{inc $i}} · {{$t.Visit}} · <span class="{{$t.Status}}">{{$t.Status}}</span></h2>
<p class="meta">{{$t.Driver}}{{if $t.Model}} · {{$t.Model}}{{end}} · {{$t.Started.Format "2006-01-02 15:04:05Z07:00"}} · {{$t.WallMS}} ms · {{usage $t.Usage}}{{if $t.Session}} · session {{$t.Session}}{{end}}</p>
{{if $t.System}}<details><summary>Instructions</summary><pre>{{$t.System}}</pre></details>{{end}}
<details><summary>Prompt: {{oneLine $t.Prompt 80}}</summary><pre>{{$t.Prompt}}</pre></details>
{{range $t.Steps}}<div class="step {{.Kind}}"><div class="meta">{{.Kind}}{{if .Title}}: {{.Title}}{{end}}</div><pre>{{.Text}}</pre></div>
{{end}}
<h3>Answer</h3><pre>{{$t.Answer}}</pre>{{if $t.AnswerFile}}<p class="meta">This is the start of the answer; the whole answer is in {{$t.AnswerFile}}.</p>{{end}}
{{if $t.Diagnostics}}<h3>Diagnostics</h3><ol>{{range $t.Diagnostics}}<li>{{.}}</li>{{end}}</ol>{{end}}
{{if $t.Stderr}}<details><summary>stderr</summary><pre>{{$t.Stderr}}</pre></details>{{end}}
</section>
{{end}}
</body></html>
`))
})

// usageText renders usage, naming what was not reported.
func usageText(u record.Usage) string {
	n := func(p *int64) string {
		if p == nil {
			return "not reported"
		}
		return fmt.Sprint(*p)
	}
	cost := "not reported"
	if u.Cost != nil {
		cost = fmt.Sprintf("$%.4f", *u.Cost)
	}
	return fmt.Sprintf("input %s, output %s, cost %s", n(u.Input), n(u.Output), cost)
}
