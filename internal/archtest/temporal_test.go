package archtest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestNoTemporalServerInTheBuild keeps the Temporal server out of flow: its
// cold build takes 10–20 minutes and 2.5 GB, and flow only needs the SDK
// (docs/temporal.md). Tests use the CLI's dev server, a separate program.
// The test dependencies count too: a test that imported the server would
// compile it for every `go test ./...`.
func TestNoTemporalServerInTheBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	cmd := exec.Command(goBin, "list", "-e", "-deps", "-test", "-f", "{{.ImportPath}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing dependencies: %v\n%s", err, stderr.String())
	}
	sdk := false
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "go.temporal.io/server") {
			t.Errorf("the build compiles the Temporal server: %s", p)
		}
		sdk = sdk || strings.HasPrefix(p, "go.temporal.io/sdk")
	}
	if !sdk {
		t.Error("no package depends on the Temporal SDK: this test checks nothing")
	}
}
