package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// A load reads only the Disk it is given: without one, a file that is on
// the machine's disk is not read, and the diagnostic says why.
func TestLoadReadsOnlyItsDisk(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(file, []byte("name: f\nnodes:\n  - {id: hi, run: [echo, hi]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags := Load(file, Options{Disk: osdisk.OS, UserAgentDirs: []string{}}); diags.HasErrors() {
		t.Fatalf("with the machine's disk:\n%s", diags.Error())
	}
	_, diags := Load(file, Options{UserAgentDirs: []string{}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "flows.Options.Disk") {
		t.Fatalf("a load without a Disk read the file, or did not say why not:\n%s", diags.Error())
	}
}
