package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/internal/proc"
)

// Ctrl-C while a real agent waits for its model: exit 130 within 8 s, the
// visit journaled as stopped, and no process of the run left.
func TestDriverInterruptMidTurn(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		s := modelserver.Start(t, modelserver.Reply{Text: "too late", Delay: time.Minute})
		env, frontmatter := dc.setup(t, s.URL())
		dir := t.TempDir()
		agent := "---\nname: helper\ndescription: Helps with the test\ndriver: " + dc.name +
			"\nmodel: test-model\ntools: read, ls, bash\n" + frontmatter + "---\nYou help, briefly.\n"
		for name, body := range map[string]string{"agents/helper.md": agent, "f.yaml": "name: f\nagents: [./agents]\nnodes:\n  - {id: wait, agent: helper, prompt: Take your time.}\n"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(flowBinary(t), "run", "f.yaml")
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), env...), "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill() }()

		// Wait until the agent is waiting for its model.
		deadline := time.Now().Add(60 * time.Second)
		for !asked(s, dc.path) {
			if time.Now().After(deadline) {
				t.Fatalf("the agent never asked its model\n%s", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := interrupt(t, cmd, &out)
		t.Logf("%s: Ctrl-C to exit in %v", dc.name, took)
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		if len(runs) != 1 {
			t.Fatalf("run directories: %v", runs)
		}
		if n, _ := proc.KillTagged(filepath.Base(runs[0]), 100*time.Millisecond); n != 0 {
			t.Errorf("%d processes of the run outlived it", n)
		}
		stopped := false
		for _, f := range journal(t, runs[0]) {
			stopped = stopped || (f.Type == "end" && f.Visit == "wait" && f.Error != nil && f.Error.Kind == "stopped")
		}
		if !stopped {
			t.Errorf("the visit is not journaled as stopped\n%s", out.String())
		}
	})
}

func asked(s *modelserver.Server, path string) bool {
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, path) || r.Path == path {
			return true
		}
	}
	return false
}
