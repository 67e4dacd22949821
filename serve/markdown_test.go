package serve

import (
	"strings"
	"testing"
)

// TestMarkdownIsSafe: what an agent wrote formats text but never reaches
// the page as HTML: tags, attributes and script links stay text.
func TestMarkdownIsSafe(t *testing.T) {
	in := "# Notes <b>1</b>\n\n- **bold** and `<i>code</i>`\n- [ok](https://example.com/?a=1&b=2) [bad](javascript:alert(1))\n\n" +
		"<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n\n```\n<script>x</script>\n```\n1. one\n2. *two*\n"
	got := string(markdown(in))
	for _, want := range []string{
		"<h1>Notes &lt;b&gt;1&lt;/b&gt;</h1>",
		"<li><strong>bold</strong> and <code>&lt;i&gt;code&lt;/i&gt;</code></li>",
		`<a href="https://example.com/?a=1&amp;b=2" rel="nofollow noopener">ok</a> [bad](javascript:alert(1))`,
		"&lt;script&gt;alert(1)&lt;/script&gt;\n&lt;img src=x onerror=alert(1)&gt;",
		"<pre><code>&lt;script&gt;x&lt;/script&gt;</code></pre>",
		"<ol>\n<li>one</li>\n<li><em>two</em></li>\n</ol>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<script") || strings.Contains(got, "<img") || strings.Contains(got, `href="javascript`) {
		t.Errorf("raw HTML reached the page:\n%s", got)
	}
}
