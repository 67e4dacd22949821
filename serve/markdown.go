package serve

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// md renders an agent's output for the page. goldmark's default renderer
// never passes raw HTML through (it writes "raw HTML omitted") and drops
// javascript: and other dangerous link targets, so what an agent wrote can
// format text but cannot script the page (docs/serve.md).
var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// markdown is the template function: Markdown as safe HTML, or the text
// escaped if it cannot be rendered.
func markdown(s string) template.HTML {
	var b bytes.Buffer
	if err := md.Convert([]byte(s), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return template.HTML(b.String()) // #nosec G203 -- goldmark without html.WithUnsafe escapes raw HTML
}
