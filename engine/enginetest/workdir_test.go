package enginetest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// Where a run works is its host's (engine.Host.WorkDir), not a walker
// setting: every leaf outside an isolated scope is handed the host's
// directory, a turn's prompt says it, and the run's input cannot change it.
func TestLeavesWorkWhereTheHostSays(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	src := "name: f\nagents:\n  - {name: w, description: looks, driver: exec, command: [x]}\nnodes:\n  - {id: look, agent: w, prompt: look}\n  - {id: list, run: [ls]}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	h := enginetest.New()
	h.Dir = filepath.Join(dir, "work")
	var turnDir, prompt, cmdDir string
	h.Turns = func(tr *engine.Turn) (*engine.TurnResult, error) {
		turnDir, prompt = tr.WorkDir, tr.Prompt
		return &engine.TurnResult{Status: engine.Completed, Output: "ok"}, nil
	}
	h.Commands = func(c *engine.Command) (*engine.CommandResult, error) {
		cmdDir = c.Dir
		return &engine.CommandResult{}, nil
	}
	res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, h, nil)
	if err != nil || !res.OK {
		t.Fatalf("walk: %v %+v", err, res)
	}
	if turnDir != h.Dir || cmdDir != h.Dir {
		t.Errorf("the turn worked in %q and the command in %q, want the host's %q", turnDir, cmdDir, h.Dir)
	}
	if want := "Working directory: " + h.Dir; !strings.Contains(prompt, want) {
		t.Errorf("the prompt does not say %q:\n%s", want, prompt)
	}
}
