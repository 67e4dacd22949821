package flows

import (
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// Reload reads nothing: a recorded plan with an isolated scope compiles
// again where its working directory is no repository — is not there at
// all, as on a Temporal worker without the checkout — and a called flow
// that is on the disk but not among the recorded sources is not read.
func TestReloadReadsNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	src := "name: f\nnodes:\n  - {id: iso, isolation: worktree, run: [echo, hi]}\n"
	plan, diags := Reload(file, map[string][]byte{file: []byte(src)}, nil, filepath.Join(dir, "not-here"), Options{Disk: osdisk.OS})
	if diags.HasErrors() {
		t.Fatalf("a recorded plan is checked against the disk:\n%s", diags.Error())
	}
	if plan.Root.Name != "f" {
		t.Fatalf("plan %q", plan.Root.Name)
	}
	other := filepath.Join(dir, "g.yaml")
	_, diags = Reload(other, map[string][]byte{file: []byte(src)}, nil, dir, Options{Disk: osdisk.OS})
	if !diags.HasErrors() {
		t.Fatal("Reload read a flow file that the run did not record")
	}
}
