package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
)

// TestHostileTemporalWithoutKeyMasksSecretShapes: without temporal.key,
// an agent's answer quoting a GitHub token flow was never told of, and a
// command printing a database URL with its password, reach the workflow
// history masked: no payload holds either, and the run still succeeds.
func TestHostileTemporalWithoutKeyMasksSecretShapes(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	pat := "ghp_" + strings.Repeat("Zq8vW2xKp9LmN4rT7yB1", 2)[:36]
	pass := "Zq8vW2xKp9LmN4rT"
	dir := t.TempDir()
	flow := `name: f
agents:
  - {name: leaker, description: quotes a token it read, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "found GH_PAT=` + pat + `"']}
nodes:
  - {id: say, agent: leaker, prompt: x}
  - {id: db, run: 'echo "DATABASE_URL=postgres://app:` + pass + `@db.internal:5432/app"'}
`
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	startWorker(t, bin, dir, srv.Address, "plain", "--workdir", dir)
	runsDir := t.TempDir()
	cmd := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "plain", "f.yaml")
	cmd.Dir, cmd.Env = dir, temporalEnv(runsDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run --temporal: %v\n%s", err, out)
	}
	runs, _ := rundir.List(runsDir)
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	show := exec.Command(clitest.Tool(t, "temporal"), "workflow", "show", "--address", srv.Address, "--workflow-id", runs[0].ID, "--output", "json")
	history, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("temporal workflow show: %v\n%s", err, history)
	}
	var doc any
	if err := json.Unmarshal(history, &doc); err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	payloadData(doc, &all)
	if all.Len() == 0 {
		t.Fatal("no payload in the history")
	}
	for _, s := range []string{pat, pass} {
		if bytes.Contains(all.Bytes(), []byte(s)) || bytes.Contains(history, []byte(s)) {
			t.Errorf("the history holds %q in clear", s[:8])
		}
	}
	if !bytes.Contains(all.Bytes(), []byte("GH_PAT=[redacted]")) {
		t.Errorf("the answer is not in the history, masked")
	}
}

// payloadData appends the decoded data of every payload in a history's
// JSON to buf.
func payloadData(v any, buf *bytes.Buffer) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["metadata"].(map[string]any); ok {
			if d, ok := v["data"].(string); ok {
				if b, err := base64.StdEncoding.DecodeString(d); err == nil {
					buf.Write(b)
					buf.WriteByte('\n')
				}
			}
		}
		for _, x := range v {
			payloadData(x, buf)
		}
	case []any:
		for _, x := range v {
			payloadData(x, buf)
		}
	}
}
