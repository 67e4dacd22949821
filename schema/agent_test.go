package schema

import (
	"strings"
	"testing"
)

func TestAgentNameMustBeAFileName(t *testing.T) {
	for _, name := range []string{"../escape", "a/b", `a\b`, ".."} {
		_, diags := ParseAgentFile("a.md", []byte("---\nname: '"+name+"'\ndescription: d\n---\nbody"))
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "a.md:2:7: name:") {
			t.Errorf("name %q: want a name error at 2:7, got %v", name, diags)
		}
	}
	if _, diags := ParseAgentFile("a.md", []byte("---\nname: code-reviewer.v2\ndescription: d\n---\n")); diags.HasErrors() {
		t.Errorf("a plain name was refused: %v", diags)
	}
}
