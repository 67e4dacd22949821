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
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// testTemporalKey is a key of the payload codec (32 bytes, base64).
var testTemporalKey = base64.StdEncoding.EncodeToString([]byte("flow-test-temporal-key-32-bytes!"))

// TestTemporalSecretsLeaveNoWorkerAndNoHistory: a model server that echoes
// the key in an answer and in an error, an exec agent and a command that
// print it, and an agent whose prompt carries those outputs, run on two
// workers (the openai driver and the real pi CLI) with a key for the
// payload codec: the key is in no file on either worker (homes,
// transcripts, answers, the CLI's own session files), nor in the client's
// mirror, nor anywhere in `temporal workflow show --output json` of the
// run — whose payloads are all encrypted, so neither the prompts nor the
// answers are there in clear.
func TestTemporalSecretsLeaveNoWorkerAndNoHistory(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	s := modelserver.Start(t)
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if bytes.Contains(r.Body, []byte("please fail")) {
			return modelserver.Reply{Status: 401, Message: "invalid key " + keyOf(r)}
		}
		return modelserver.Reply{Text: "your key is " + keyOf(r)}
	})
	pi := driverByName(t, "pi")
	env := []string{"MY_LLM_ACCESS=" + hostileKey, "FLOW_TEMPORAL_KEY=" + testTemporalKey, cleanHome(t)}
	for _, e := range pi.env(s.URL()) {
		env = append(env, strings.ReplaceAll(e, "FLOW_TEST_MODEL_KEY", "MY_LLM_ACCESS"))
	}
	env = append(env, "FLOW_DRIVERS_PI_BINARY="+clitest.Binary(t, "pi"))
	files := map[string]string{
		"agents/helper.md":   "---\nname: helper\ndescription: Echoes\ndriver: openai\nmodel: test-model\nbase_url: " + s.URL() + "/v1\napi_key_env: MY_LLM_ACCESS\n---\nYou help.\n",
		"agents/pihelper.md": "---\nname: pihelper\ndescription: Echoes\ndriver: pi\nmodel: test-model\n---\nYou help.\n",
		"f.yaml": `name: f
agents:
  - ./agents
  - {name: printer, description: prints the key, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "printed $MY_LLM_ACCESS"; echo "err $MY_LLM_ACCESS" >&2']}
nodes:
  - {id: fail, agent: helper, prompt: please fail, on_fail: continue}
  - {id: print, agent: printer, prompt: x}
  - {id: shell, run: 'echo "shell $MY_LLM_ACCESS"; echo "shell err $MY_LLM_ACCESS" >&2'}
  - {id: echo, agent: helper, prompt: "echo the secret words ${{ print.output }} ${{ shell.output.report }}"}
  - {id: pi, agent: pihelper, prompt: "pi says the secret words"}
`,
	}
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two workers, each with a checkout and a runs directory of its own.
	var places []string
	for range 2 {
		work, runs := t.TempDir(), t.TempDir()
		if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		startWorkerEnv(t, bin, t.TempDir(), srv.Address, "secrets", env, "--workdir", work, "--runs-dir", runs, "--concurrency", "1")
		places = append(places, work, runs)
	}
	runsDir := t.TempDir()
	cmd := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "secrets", "f.yaml")
	cmd.Dir, cmd.Env = dir, append(temporalEnv(runsDir), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run --temporal: %v\n%s", err, out)
	}
	noKey(t, "flow run --temporal's output", string(out))
	if !strings.Contains(string(out), "[redacted]") {
		t.Errorf("flow run shows no redacted answer:\n%s", out)
	}
	runs, _ := rundir.List(runsDir)
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	keyNowhereOf(t, runs[0].Dir, hostileKey)
	for _, p := range places {
		keyInNoFile(t, p, hostileKey)
	}
	show := exec.Command(clitest.Tool(t, "temporal"), "workflow", "show", "--address", srv.Address, "--workflow-id", runs[0].ID, "--output", "json")
	history, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("temporal workflow show: %v\n%s", err, history)
	}
	// Ids stay readable (the run's, its visits' paths, the task queues):
	// they are the flow's structure; its data is what must not be there.
	for _, clear := range []string{hostileKey, "please fail", "secret words", "your key is", "printed", "shell err"} {
		if bytes.Contains(history, []byte(clear)) {
			t.Errorf("the run's history holds %q in clear", clear)
		}
	}
	var doc any
	if err := json.Unmarshal(history, &doc); err != nil {
		t.Fatalf("temporal workflow show --output json: %v\n%s", err, history)
	}
	var sealed int
	var clearPayloads []string
	payloads(doc, "", &sealed, &clearPayloads)
	if sealed < 10 || len(clearPayloads) > 0 {
		t.Errorf("the run's history holds %d encrypted payloads and these in clear: %v; want all encrypted", sealed, clearPayloads)
	}
}

// payloads counts the payloads in a history's JSON by their encoding:
// flow's encrypted one, or any other (whose paths it lists). Search
// attributes are the server's index, in clear by design: the version
// marker's TemporalChangeVersion names only the workflow's change ids.
func payloads(v any, path string, sealed *int, clear *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if md, ok := v["metadata"].(map[string]any); ok {
			if enc, ok := md["encoding"].(string); ok {
				if b, _ := base64.StdEncoding.DecodeString(enc); string(b) == "binary/flow-aes-gcm" {
					*sealed++
				} else if !strings.Contains(path, "searchAttributes") {
					*clear = append(*clear, path)
				}
			}
		}
		for k, x := range v {
			payloads(x, path+"."+k, sealed, clear)
		}
	case []any:
		for _, x := range v {
			payloads(x, path+"[]", sealed, clear)
		}
	}
}

// keyInNoFile fails the test for every file under dir that holds key.
func keyInNoFile(t *testing.T, dir, key string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
			t.Errorf("the key is written in %s", path)
		}
		return nil
	})
}
