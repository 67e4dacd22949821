package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReservedIdsDocumented: every id flow refuses as reserved is named in
// docs/flow-files.md, where the reason is written.
func TestReservedIdsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "flow-files.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "**Reserved ids.**")
	if i < 0 {
		t.Fatal("docs/flow-files.md has no Reserved ids paragraph")
	}
	para := doc[i:]
	if j := strings.Index(para, "\n- "); j >= 0 {
		para = para[:j]
	}
	for _, r := range reserved {
		if !strings.Contains(para, "`"+r+"`") {
			t.Errorf("reserved id %q is not named in docs/flow-files.md's Reserved ids paragraph", r)
		}
	}
	if !strings.Contains(para, "reason") {
		t.Error("the Reserved ids paragraph gives no reason")
	}
}
