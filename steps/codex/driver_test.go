package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/steps/transcript"
)

const fakeKey = "sk-codex-test-DO-NOT-LEAK-77c1"

// turn returns a turn against s, with the key in the environment (so its
// tests may not run in parallel).
func turn(t *testing.T, s *modelserver.Server) *engine.Turn {
	t.Helper()
	t.Setenv("FLOW_TEST_CODEX_KEY", fakeKey)
	tn := clitest.Turn(t, &flows.Agent{Name: "coder", Driver: "codex", BaseURL: s.URL(), APIKeyEnv: "FLOW_TEST_CODEX_KEY",
		Instructions: "You are FLOWCODER."}, "List the files.")
	if err := os.WriteFile(filepath.Join(tn.WorkDir, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestCodexPlainTurn(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Text: "Hello from the model.", Input: 1234, Output: 7})
	tn := turn(t, s)
	// No CodexHome: the driver's own home inside the scope's home.
	res, err := New(Options{Binary: bin}).Turn(context.Background(), tn)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.Completed || res.Output != "Hello from the model." {
		t.Fatalf("Turn = %s %q %q\nstderr: %s", res.Status, res.Output, res.Diagnostics, res.Stderr)
	}
	if u := res.Usage; u.Input == nil || *u.Input != 1234 || *u.Output != 7 || u.Cost != nil {
		t.Errorf("usage = %+v", u)
	}
	if res.Session == "" {
		t.Error("no session (thread id)")
	}
	reqs := s.Requests()
	var gen []modelserver.Request
	for _, r := range reqs {
		if r.Path == "/v1/responses" {
			gen = append(gen, r)
		}
	}
	if len(gen) != 1 || gen[0].Header.Get("Authorization") != "Bearer "+fakeKey || !strings.Contains(string(gen[0].Body), "You are FLOWCODER.") {
		t.Errorf("requests = %d to /v1/responses; want one with the key and the instructions", len(gen))
	}
	if !strings.Contains(string(gen[0].Body), `"model":"test-model"`) {
		t.Error("the request does not name the model")
	}
	if _, err := os.Stat(filepath.Join(tn.Home, "codex-home")); err != nil {
		t.Errorf("no codex home in the scope's home: %v", err)
	}
	if turns, err := transcript.Turns(res.Transcript); err != nil || len(turns) != 1 || turns[0].Answer != res.Output {
		t.Errorf("transcript = %+v, %v", turns, err)
	}
	if _, err := os.Stat(filepath.Join(tn.Home, "coder.html")); err != nil {
		t.Error(err)
	}
	clitest.NoKey(t, tn.Home, fakeKey)
	_ = filepath.Walk(tn.Home, func(p string, info os.FileInfo, err error) error { t.Log(p); return nil })
}

func TestCodexToolCall(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "exec_command", Arguments: `{"cmd":"ls"}`}},
		modelserver.Reply{Text: "There is one file: hello.txt."},
	)
	tn := turn(t, s)
	var acts []string
	tn.Progress = func(p engine.Progress) { acts = append(acts, p.Activity) }
	var facts []record.ToolCall
	tn.Tools = &record.ToolLog{Record: func(c record.ToolCall) error { facts = append(facts, c); return nil }}
	home := t.TempDir()
	res, err := New(Options{Binary: bin, CodexHome: home}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "There is one file: hello.txt." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	// The command is journalled for the trace, without usage: Codex shows
	// none per request.
	if len(facts) != 1 || facts[0].Name != "command_execution" || facts[0].ID == "" || facts[0].Protocol != "codex" ||
		facts[0].Error || facts[0].Usage != nil {
		t.Errorf("tool facts = %+v", facts)
	}
	reqs := s.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, `"type":"function_call_output"`) || !strings.Contains(last, "hello.txt") {
		t.Errorf("the second request does not carry the tool's output")
	}
	if !strings.Contains(strings.Join(acts, "\n"), "running ") {
		t.Errorf("progress = %q, want a running command", acts)
	}
	turns, _ := transcript.Turns(res.Transcript)
	if len(turns) != 1 || len(turns[0].Steps) < 2 {
		t.Errorf("transcript steps = %+v", turns)
	}
	clitest.NoKey(t, home, fakeKey)
}

func TestCodexTypedOutput(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Text: `{"approved":true}`})
	tn := turn(t, s)
	tn.OutputSchema = []byte(`{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"],"additionalProperties":false}`)
	res, err := New(Options{Binary: bin, CodexHome: t.TempDir()}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != `{"approved":true}` {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	body := string(s.Requests()[len(s.Requests())-1].Body)
	if !strings.Contains(body, `"json_schema"`) || !strings.Contains(body, `"approved"`) {
		t.Errorf("the request carries no json_schema text format")
	}
}

func TestCodexMemory(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Text: "FIRST-ANSWER"}, modelserver.Reply{Text: "second answer"})
	d := New(Options{Binary: bin, CodexHome: t.TempDir()})
	tn := turn(t, s)
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("first turn = %+v, %v", res, err)
	}
	tn2 := *tn
	tn2.Session, tn2.Prompt = res.Session, "And again."
	res2, err := d.Turn(context.Background(), &tn2)
	if err != nil || res2.Status != engine.Completed || res2.Output != "second answer" || res2.Session != res.Session {
		t.Fatalf("second turn = %+v, %v", res2, err)
	}
	reqs := s.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "FIRST-ANSWER") || !strings.Contains(last, "List the files.") {
		t.Error("the resumed request does not carry the first exchange")
	}
}

func TestCodexServerError(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Status: 500})
	tn := turn(t, s)
	start := time.Now()
	// The bound flow configures by default: a failing server still fails fast.
	res, err := New(Options{Binary: bin, MaxRetries: 1, CodexHome: t.TempDir()}).Turn(context.Background(), tn)
	took := time.Since(start)
	if err != nil || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	t.Logf("500 -> failed in %v: %q", took, res.Diagnostics)
	if took > 30*time.Second {
		t.Errorf("a 500 took %v to fail, want under 30 s", took)
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "the turn failed") || len(s.Requests()) == 0 {
		t.Errorf("diagnostics = %q after %d requests", res.Diagnostics, len(s.Requests()))
	}
}

func TestCodexCancel(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Text: "never", Delay: time.Hour})
	tn := turn(t, s)
	ctx, cancel := context.WithCancelCause(context.Background())
	tn.Progress = func(p engine.Progress) {
		if p.Activity == "thinking" { // the turn started: the request is on its way
			time.AfterFunc(500*time.Millisecond, func() { cancel(errors.New("stopped by the test")) })
		}
	}
	start := time.Now()
	res, err := New(Options{Binary: bin, CodexHome: t.TempDir(), Grace: 2 * time.Second}).Turn(ctx, tn)
	t.Logf("cancelled turn returned after %v", time.Since(start))
	if err == nil || err.Error() != "stopped by the test" || res == nil || res.Status != engine.Aborted {
		t.Fatalf("Turn = %+v, %v; want aborted with the cause", res, err)
	}
	clitest.NoneLeft(t, tn.RunID)
}

func TestCodexNoKey(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Text: "fine"})
	tn := turn(t, s)
	t.Setenv("FLOW_TEST_CODEX_KEY", "")
	res, err := New(Options{Binary: bin, CodexHome: t.TempDir()}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	for _, r := range s.Requests() {
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("%s sent Authorization %q without a key", r.Path, h)
		}
	}
}

func TestArguments(t *testing.T) {
	t.Parallel()
	tn := &engine.Turn{Agent: &flows.Agent{Name: "a", Tools: []string{"read", "Bash"}, Thinking: "high"}, Session: "th-1"}
	got := strings.Join(arguments(tn, "m", "http://h:1", "KEY", "/s.json", 1), " ")
	want := `exec resume th-1 --json --skip-git-repo-check -c approval_policy="never" -c sandbox_mode="workspace-write" ` +
		`-c features.shell_snapshot=false -c model_reasoning_effort="high" -c model_provider="flow" -c model_providers.flow.name="flow" ` +
		`-c model_providers.flow.base_url="http://h:1/v1" -c model_providers.flow.wire_api="responses" ` +
		`-c model_providers.flow.env_key="KEY" -c model_providers.flow.request_max_retries=1 ` +
		`-c model_providers.flow.stream_max_retries=1 -m m --output-schema /s.json -`
	if got != want {
		t.Errorf("arguments =\n%s\nwant\n%s", got, want)
	}
	tn = &engine.Turn{Agent: &flows.Agent{Name: "a"}}
	if got := strings.Join(arguments(tn, "", "", "", "", 1), " "); got != `exec --json --skip-git-repo-check -c approval_policy="never" -c sandbox_mode="read-only" -c features.shell_snapshot=false -` {
		t.Errorf("arguments = %s", got)
	}
}

// Codex snapshots the shell's environment, the API key in it, into its
// home when a session starts, and removes the snapshot when it exits
// cleanly; a Codex that is killed leaves it in the run directory. The
// driver turns snapshots off: the directory they go to is never made.
func TestCodexHomeHasNoShellSnapshot(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Text: "Done.", Delay: 300 * time.Millisecond})
	tn := turn(t, s)
	res, err := New(Options{Binary: bin}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(tn.Home, "codex-home", "shell_snapshots")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Codex snapshotted the shell's environment into the run directory (%v)", err)
	}
	clitest.NoKey(t, tn.Home, fakeKey)
}
