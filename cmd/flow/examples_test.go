package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesValidateAndRun holds every example to what the README
// promises: it passes flow validate, and it runs to success from the
// repository root with no model and no API key.
func TestExamplesValidateAndRun(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	bin := flowBinary(t)
	runs := t.TempDir()
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := command(bin, root, runs, "validate", rel).CombinedOutput()
			if err != nil {
				t.Fatalf("flow validate %s: %v\n%s", rel, err, out)
			}
			out, err = command(bin, root, runs, "run", rel).CombinedOutput()
			if err != nil {
				t.Fatalf("flow run %s: %v\n%s", rel, err, out)
			}
			if !strings.Contains(string(out), "succeeded") {
				t.Fatalf("flow run %s did not say it succeeded:\n%s", rel, out)
			}
		})
	}
}

// command runs flow in dir with its runs in runs. Temporary files go there
// too: the writers example makes its repository in $TMPDIR, and a test
// leaves nothing behind.
func command(bin, dir, runs string, args ...string) *exec.Cmd {
	c := exec.Command(bin, args...)
	c.Dir = dir
	c.Env = append(c.Environ(), "FLOW_RUNS_DIR="+runs, "TMPDIR="+runs)
	return c
}
