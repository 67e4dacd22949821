package serve

import (
	"html/template"
	"regexp"
	"strings"
	"sync"
)

// markdown renders an agent's output for the page: a small, safe subset
// of Markdown — headings, lists, quotes, fenced code, paragraphs, and
// inline code, bold, italics and http(s) links. Every character of the
// text is HTML-escaped before any markup is added, so raw HTML an agent
// wrote shows as text and cannot script the page (docs/serve.md). A full
// Markdown library was weighed and left out: its package initialisation
// would be paid by every flow process (docs/decisions.md).
func markdown(s string) template.HTML {
	var b strings.Builder
	var para []string
	list := "" // "ul" or "ol" while in a list
	flush := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inline(strings.Join(para, "\n")) + "</p>\n")
			para = nil
		}
	}
	closeList := func() {
		if list != "" {
			b.WriteString("</" + list + ">\n")
			list = ""
		}
	}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			closeList()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			b.WriteString("<pre><code>" + template.HTMLEscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
		case trimmed == "":
			flush()
			closeList()
		case headingRE().MatchString(trimmed):
			flush()
			closeList()
			m := headingRE().FindStringSubmatch(trimmed)
			n := string(rune('0' + len(m[1])))
			b.WriteString("<h" + n + ">" + inline(m[2]) + "</h" + n + ">\n")
		case bulletRE().MatchString(line) || orderedRE().MatchString(line):
			flush()
			kind, m := "ul", bulletRE().FindStringSubmatch(line)
			if m == nil {
				kind, m = "ol", orderedRE().FindStringSubmatch(line)
			}
			if list != kind {
				closeList()
				list = kind
				b.WriteString("<" + kind + ">\n")
			}
			b.WriteString("<li>" + inline(m[1]) + "</li>\n")
		case strings.HasPrefix(trimmed, ">"):
			flush()
			closeList()
			b.WriteString("<blockquote>" + inline(strings.TrimSpace(strings.TrimPrefix(trimmed, ">"))) + "</blockquote>\n")
		default:
			closeList()
			para = append(para, trimmed)
		}
	}
	flush()
	closeList()
	return template.HTML(b.String()) // #nosec G203 -- every text part went through HTMLEscapeString
}

var (
	headingRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*$`) })
	bulletRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*[-*+]\s+(.*)$`) })
	orderedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\d{1,9}[.)]\s+(.*)$`) })
	boldRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\*\*([^*]+)\*\*|__([^_]+)__`) })
	italicRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\*([^*\s][^*]*)\*`) })
	linkRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\((https?://[^\s()]+)\)`) })
)

// inline renders code spans, bold, italics and http(s) links in one
// block's text, escaping everything else.
func inline(s string) string {
	var b strings.Builder
	parts := strings.Split(s, "`")
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<code>" + template.HTMLEscapeString(p) + "</code>")
		case i%2 == 1: // an unclosed backtick stays a backtick
			b.WriteString("`" + emphasis(p))
		default:
			b.WriteString(emphasis(p))
		}
	}
	return b.String()
}

func emphasis(s string) string {
	s = template.HTMLEscapeString(s)
	s = linkRE().ReplaceAllString(s, `<a href="$2" rel="nofollow noopener">$1</a>`)
	s = boldRE().ReplaceAllString(s, "<strong>$1$2</strong>")
	return italicRE().ReplaceAllString(s, "<em>$1</em>")
}
