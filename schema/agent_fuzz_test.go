package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseAgentFile: an agent file never panics the parser, and every
// diagnostic points inside the file.
func FuzzParseAgentFile(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/agents/*.md")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("---\nname: a\ndescription: b\ntools: read, grep\n---\nbody"))
	f.Add([]byte("---\nname: [\n---\n"))
	f.Add([]byte("no frontmatter"))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, diags := ParseAgentFile("a.md", src)
		// YAML breaks lines at \n, \r\n and a lone \r.
		lines := bytes.Count(bytes.ReplaceAll(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")), []byte("\n")) + 1
		for _, d := range diags {
			if d.Pos.File != "a.md" || d.Pos.Line < 1 || d.Pos.Line > lines+1 || d.Pos.Col < 1 {
				t.Fatalf("diagnostic outside the file (%d lines): %s", lines, d)
			}
		}
	})
}
