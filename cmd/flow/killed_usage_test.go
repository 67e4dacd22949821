package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestKilledTurnIsCounted: the engine is killed (-9) while an openai
// lead's turn waits on its child, after the lead's first request was
// billed; `flow resume` runs the lead's turn again, and its visit counts
// the killed attempt's last reported usage (events.jsonl), marked partial:
// the journal's total, and usage.json's, equal what the model server
// billed.
func TestKilledTurnIsCounted(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t)
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		rep := modelserver.Reply{Text: "the lead heard the scout", Input: 1000, Output: 20}
		if name := delegatetest.ToolName(r); name != "" && !strings.Contains(string(r.Body), "scout-said-5151") {
			rep.Text, rep.ToolCall = "", &modelserver.ToolCall{Name: name, Arguments: `{"agent":"scout","task":"look"}`}
		}
		return rep
	})
	dir := t.TempDir()
	flow := `name: killed
agents:
  - name: lead
    description: sends a scout
    driver: openai
    model: test-model
    base_url: ` + s.URL() + `/v1
    api_key_env: FLOW_TEST_MODEL_KEY
  - name: scout
    description: looks, slowly the first time
    driver: exec
    command: [bash, -c, 'cat >/dev/null; if [ -e once ]; then echo scout-said-5151; else touch once; exec sleep 60.5151; fi']
nodes:
  - id: lead
    agent: lead
    prompt: Send a scout.
    delegate: {agents: [scout]}
`
	if err := os.WriteFile(filepath.Join(dir, "killed.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	bin := flowBinary(t)
	cmd := exec.Command(bin, "run", "killed.yaml")
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(30 * time.Second)
	for len(marked("60.5151")) == 0 || s.Billed() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the scout did not start:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	defer func() {
		for _, pid := range marked("60.5151") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	killedBill := s.Billed()
	run := onlyRun(t, dir)

	resume := exec.Command(bin, "resume", filepath.Base(run))
	resume.Dir, resume.Env = dir, env
	if b, err := resume.CombinedOutput(); err != nil {
		t.Fatalf("flow resume: %v\n%s", err, b)
	}
	var sum int64
	var lead *record.Usage
	for _, f := range journal(t, run) {
		if f.Type == record.FactEnd && f.Usage != nil {
			sum += f.Usage.Tokens()
			if f.Visit == "lead" {
				lead = f.Usage
			}
		}
	}
	t.Logf("billed %d (%d before the kill); the journal counts %d; lead %s", s.Billed(), killedBill, sum, showUsage(lead))
	if sum != s.Billed() || usageTotal(t, run) != s.Billed() {
		t.Errorf("the journal counts %d tokens, usage.json %d; the server billed %d", sum, usageTotal(t, run), s.Billed())
	}
	if lead == nil || !lead.Partial {
		t.Errorf("the lead's usage %s: want it to count the killed attempt, marked partial", showUsage(lead))
	}
}
