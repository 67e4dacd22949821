package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package doc names every command flow has (hidden ones in its closing
// remark), and no command flow does not have: the doc's command list and
// the cobra tree are the same set.
func TestPackageDocNamesEveryCommand(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var inTree []string
	for _, c := range newRoot(io.Discard, io.Discard).Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		inTree = append(inTree, c.Name())
		if !regexp.MustCompile(`(flow |\| |hidden )` + regexp.QuoteMeta(c.Name()) + `\b`).Match(doc) {
			t.Errorf("doc.go does not name flow %s", c.Name())
		}
	}
	// Each "//\tflow A … | B … | C" line names A, B and C.
	var inDoc []string
	for _, line := range strings.Split(string(doc), "\n") {
		usage, ok := strings.CutPrefix(line, "//\tflow ")
		if !ok {
			continue
		}
		for _, alt := range strings.Split(usage, " | ") {
			if f := strings.Fields(alt); len(f) > 0 && regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(f[0]) {
				inDoc = append(inDoc, f[0])
			}
		}
	}
	if len(inDoc) == 0 {
		t.Fatal("doc.go lists no command (lines `//\tflow NAME …`)")
	}
	for _, name := range inDoc {
		if !slices.Contains(inTree, name) {
			t.Errorf("doc.go names flow %s, which is no command of flow's", name)
		}
	}
}
