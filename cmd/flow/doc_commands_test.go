package main

import (
	"io"
	"os"
	"regexp"
	"testing"
)

// The package doc names every command flow has (hidden ones aside).
func TestPackageDocNamesEveryCommand(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range newRoot(io.Discard, io.Discard).Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !regexp.MustCompile(`(flow |\| )` + regexp.QuoteMeta(c.Name()) + `\b`).Match(doc) {
			t.Errorf("doc.go does not name flow %s", c.Name())
		}
	}
}
