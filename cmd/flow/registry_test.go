package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/drivers"
)

// prefixer is a driver of the test's own: it answers with its configured
// prefix and the turn's first line.
type prefixer struct{ prefix string }

func (p prefixer) Turn(_ context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	first, _, _ := strings.Cut(t.Prompt, "\n")
	return &engine.TurnResult{Status: engine.Completed, Output: p.prefix + first}, nil
}

// inDir runs the test in a directory of its own with a HOME of its own, so
// that no configuration but the test's is read.
func inDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Chdir(dir)
	return dir
}

// TestBuildDriversReadsEachSpecsKeys checks that cmd hands each registered
// driver the keys its spec names, from the configuration file and FLOW_*
// variables alike, and builds every driver this build registers.
func TestBuildDriversReadsEachSpecsKeys(t *testing.T) {
	dir := inDir(t)
	if err := os.MkdirAll(filepath.Join(dir, ".flow"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := "drivers:\n  echo:\n    prefix: 'from the file: '\n  pi:\n    max_retries: 3\n"
	if err := os.WriteFile(filepath.Join(dir, ".flow", "config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry()
	reg.Register(drivers.Spec{Name: "echo", Keys: []string{"prefix"},
		New: func(cfg drivers.Config) (engine.Driver, error) { return prefixer{cfg.String("prefix")}, nil }})
	a := &app{cfg: viper.New(), drivers: reg}
	if err := a.loadConfig(&cobra.Command{}); err != nil {
		t.Fatal(err)
	}
	root, err := a.runner()
	if err != nil {
		t.Fatal(err)
	}
	drivers := root.Drivers()
	for _, name := range []string{"pi", "claude", "codex", "openai", "exec", "echo"} {
		if drivers[name] == nil {
			t.Errorf("no %s driver", name)
		}
	}
	if p, _ := drivers["echo"].(prefixer); p.prefix != "from the file: " {
		t.Errorf("echo's prefix = %q, want the file's", p.prefix)
	}
	t.Setenv("FLOW_DRIVERS_ECHO_PREFIX", "from the environment: ")
	a.root = nil // a new process
	if root, err = a.runner(); err != nil {
		t.Fatal(err)
	}
	drivers = root.Drivers()
	if p, _ := drivers["echo"].(prefixer); p.prefix != "from the environment: " {
		t.Errorf("echo's prefix = %q, want the variable's", p.prefix)
	}
}

// TestDriverConfigErrorIsInvalid checks that a driver configuration value
// that cannot be used ends `flow run` with exit 2, naming the key, before
// anything runs.
func TestDriverConfigErrorIsInvalid(t *testing.T) {
	dir := inDir(t)
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte("name: f\nnodes:\n  - {id: a, run: [echo, hi]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOW_DRIVERS_CLAUDE_MAX_RETRIES", "many")
	var stdout, stderr bytes.Buffer
	root := newRoot(&stdout, &stderr)
	root.SetArgs([]string{"run", "f.yaml"})
	err := root.Execute()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitInvalid {
		t.Fatalf("flow run = %v, want exit %d", err, exitInvalid)
	}
	if want := `drivers.claude.max_retries is "many", not a whole number`; !strings.Contains(ee.msg, want) {
		t.Errorf("error %q does not say %q", ee.msg, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ".flow", "runs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run directory was made (%v)", err)
	}
}

// TestValidateListsTheRegisteredDrivers checks that the loader learns the
// driver names from the registry: an unknown one is positioned and the
// hint lists what this build provides.
func TestValidateListsTheRegisteredDrivers(t *testing.T) {
	dir := inDir(t)
	src := "name: f\nnodes:\n  - {id: a, agent: {name: x, description: d, driver: nope}, prompt: p}\n"
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	root := newRoot(&stdout, &stderr)
	root.SetArgs([]string{"validate", "f.yaml"})
	var ee *exitError
	if err := root.Execute(); !errors.As(err, &ee) || ee.code != exitInvalid {
		t.Fatalf("flow validate = %v, want exit %d", err, exitInvalid)
	}
	want := "f.yaml:3:54: driver: unknown driver \"nope\"\n" +
		"    3 |   - {id: a, agent: {name: x, description: d, driver: nope}, prompt: p}\n" +
		"      |                                                      ^\n\thint: drivers are pi, claude, codex, openai, native, exec\n"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant among it:\n%s", stderr.String(), want)
	}
}
