package flows

import (
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

func TestLoadSpecExample(t *testing.T) {
	p, diags := Load("testdata/ok/review.yaml", Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("unexpected diagnostics:\n%s", diags.Error())
	}
	if p.Root.Name != "review" || len(p.Root.Nodes) != 6 {
		t.Fatalf("plan: %+v", p.Root)
	}
	if p.Flows["release-notes"] == nil {
		t.Fatal("called flow not loaded")
	}
}
