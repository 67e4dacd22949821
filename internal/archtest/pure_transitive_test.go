package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeep are what the walker may not reach through any import,
// however indirect: running programs, the run directory, git, the
// drivers, Temporal and goroutine pools. (os and sync are reached through
// the standard library itself, fmt included; TestEnginePure holds the
// walker's own files to them.)
var forbiddenDeep = []string{
	"os/exec", module + "/rundir", module + "/internal/gitwork", module + "/internal/proc",
	module + "/steps/", module + "/reuse", "go.temporal.io/", "github.com/sourcegraph/conc",
}

// TestEngineIsPureTransitively walks every package the walker imports,
// directly or not (go list -deps): none is an effect of a host's. A
// package the engine imports that runs git (as flows once did, through
// gitwork, to check a repository) fails it, and so does one of the
// module's own that imports os, os/exec or the network (as flows once did,
// to read flow files: the disk is now a flows.Disk its caller gives).
func TestEngineIsPureTransitively(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/engine").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range forbiddenDeep {
			if dep == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(dep, bad) || dep == strings.TrimSuffix(bad, "/") {
				t.Errorf("the walker reaches %s", dep)
			}
		}
	}
	for path, p := range listDeps(t, module+"/engine") {
		if !strings.HasPrefix(path, module+"/") {
			continue
		}
		for _, im := range p.Imports {
			if hostOnly(im) {
				t.Errorf("the walker reaches %s, which imports %s", strings.TrimPrefix(path, module+"/"), im)
			}
		}
	}
}
