package claude

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// fakeKey is the key the tests hand claude; it must never reach a file.
const fakeKey = "sk-ant-flow-test-0123456789"

// e2e returns a driver pointed at a fresh model server, and the server.
func e2e(t *testing.T, replies ...modelserver.Reply) (*Driver, *modelserver.Server) {
	t.Helper()
	bin := clitest.Binary(t, "claude")
	s := modelserver.Start(t, replies...)
	return New(Options{Binary: bin, BaseURL: s.URL(), APIKeyEnv: "FLOW_TEST_CLAUDE_KEY",
		Env: []string{"FLOW_TEST_CLAUDE_KEY=" + fakeKey}, Grace: time.Second}), s
}

// newTurn returns a turn of a read-only agent on the test model.
func newTurn(t *testing.T, prompt string) *engine.Turn {
	t.Helper()
	return clitest.Turn(t, &flows.Agent{Name: "scout", Driver: "claude", Instructions: "You are terse & <careful>."}, prompt)
}

func TestE2EPlain(t *testing.T) {
	t.Parallel()
	d, s := e2e(t, modelserver.Reply{Text: "Hello from the server.", Input: 120, Output: 7})
	tn := newTurn(t, "Say hello.")
	var progress clitest.Progress
	tn.Progress = progress.Record
	start := time.Now()
	res, err := d.Turn(context.Background(), tn)
	t.Logf("plain turn took %v", time.Since(start))
	if err != nil || res.Status != engine.Completed || res.Output != "Hello from the server." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	clitest.Record(t, res, "plain.jsonl")
	if res.Usage.Input == nil || *res.Usage.Input != 120 || *res.Usage.Output != 7 || *res.Usage.Turns != 1 {
		t.Errorf("usage = %+v", res.Usage)
	}
	if res.Session == "" {
		t.Error("no session id")
	}
	reqs := s.Requests()
	var gen []modelserver.Request
	for _, r := range reqs {
		if r.Path == "/v1/messages" {
			gen = append(gen, r)
		}
	}
	if len(gen) != 1 {
		t.Fatalf("%d generation requests, want 1", len(gen))
	}
	body := string(gen[0].Body)
	for _, want := range []string{"Say hello.", "You are terse"} {
		if !strings.Contains(body, want) {
			t.Errorf("the request lacks %q", want)
		}
	}
	if got := gen[0].Header.Get("X-Api-Key"); got != fakeKey {
		t.Errorf("x-api-key = %q, want the key from the environment", got)
	}
	page, err := os.ReadFile(filepath.Join(tn.Home, "scout.html"))
	if err != nil || !strings.Contains(string(page), "Hello from the server.") {
		t.Errorf("no readable transcript: %v", err)
	}
	clitest.NoKey(t, tn.Home, fakeKey)
	if !progress.Has("writing") {
		t.Errorf("progress = %s, want writing", &progress)
	}
}

func TestE2EToolCall(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"ls","description":"list files"}`}},
		modelserver.Reply{Text: "I saw marker.txt."})
	tn := newTurn(t, "List the files.")
	tn.Agent.Tools = []string{"read", "bash"}
	if err := os.WriteFile(filepath.Join(tn.WorkDir, "marker.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var progress clitest.Progress
	tn.Progress = progress.Record
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "I saw marker.txt." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	clitest.Record(t, res, "tool.jsonl")
	if *res.Usage.Turns != 2 {
		t.Errorf("turns = %d, want 2", *res.Usage.Turns)
	}
	// The second request carries the tool's real result.
	var last string
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" {
			last = string(r.Body)
		}
	}
	if !strings.Contains(last, "marker.txt") {
		t.Errorf("the tool result did not reach the model: %.500s", last)
	}
	if !progress.Has("using Bash") {
		t.Errorf("progress = %s, want using Bash", &progress)
	}
	// Running a command makes Claude Code snapshot the shell into its
	// configuration directory, which is in the run directory.
	clitest.NoKey(t, tn.Home, fakeKey)
}

func TestE2ETyped(t *testing.T) {
	t.Parallel()
	// With --json-schema, Claude Code gives the model a StructuredOutput
	// tool; the result event carries what the model called it with.
	d, s := e2e(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "StructuredOutput", Arguments: `{"approved":true,"remarks":[]}`}},
		modelserver.Reply{Text: "Done."})
	tn := newTurn(t, "Judge it.")
	tn.OutputSchema = []byte(`{"type":"object","properties":{"approved":{"type":"boolean"},"remarks":{"type":"array","items":{"type":"string"}}},"required":["approved","remarks"]}`)
	res, err := d.Turn(context.Background(), tn)
	clitest.Record(t, res, "typed.jsonl")
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(res.Output), &got); err != nil || got["approved"] != true {
		t.Errorf("output = %q, want the structured output", res.Output)
	}
	var tools string
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" {
			tools = string(r.Body)
			break
		}
	}
	if !strings.Contains(tools, "StructuredOutput") {
		t.Errorf("the request offers no StructuredOutput tool")
	}
}

func TestE2EMemory(t *testing.T) {
	t.Parallel()
	d, s := e2e(t, modelserver.Reply{Text: "First answer: 41."}, modelserver.Reply{Text: "Second answer: 42."})
	tn := newTurn(t, "First question.")
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Session == "" {
		t.Fatalf("first Turn = %+v, %v", res, err)
	}
	second := *tn
	second.Prompt, second.Session = "Second question.", res.Session
	res2, err := d.Turn(context.Background(), &second)
	if err != nil || res2.Status != engine.Completed || res2.Output != "Second answer: 42." {
		t.Fatalf("second Turn = %+v, %v", res2, err)
	}
	clitest.Record(t, res2, "memory.jsonl")
	if res2.Session != res.Session {
		t.Errorf("session %q, want %q continued", res2.Session, res.Session)
	}
	var last string
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" {
			last = string(r.Body)
		}
	}
	for _, want := range []string{"First question.", "First answer: 41.", "Second question."} {
		if !strings.Contains(last, want) {
			t.Errorf("the second request lacks %q", want)
		}
	}
	page, _ := os.ReadFile(filepath.Join(tn.Home, "scout.html"))
	if strings.Count(string(page), "<h2>") != 2 {
		t.Errorf("the transcript page does not show both turns")
	}
}

func TestE2EServerError(t *testing.T) {
	t.Parallel()
	d, _ := e2e(t, modelserver.Reply{Status: 500})
	tn := newTurn(t, "Say hello.")
	start := time.Now()
	res, err := d.Turn(context.Background(), tn)
	took := time.Since(start)
	t.Logf("a 500 answer failed the turn in %v", took)
	if err != nil || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want failed", res, err)
	}
	clitest.Record(t, res, "error500.jsonl")
	if took > 30*time.Second {
		t.Errorf("took %v, want under 30s", took)
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "500") {
		t.Errorf("diagnostics = %q, want the status", res.Diagnostics)
	}
}

func TestE2ECancel(t *testing.T) {
	t.Parallel()
	// Claude Code runs a tool's shell command in a process group of its
	// own; cancelling must end it too. The odd length marks the process.
	const marker = "4243.71"
	d, _ := e2e(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"sleep ` + marker + `","description":"wait"}`}},
		modelserver.Reply{Text: "never reached"})
	tn := newTurn(t, "Wait.")
	tn.Agent.Tools = []string{"Bash"}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("the test cancels")
	done := make(chan error, 1)
	var res *engine.TurnResult
	go func() {
		var err error
		res, err = d.Turn(ctx, tn)
		done <- err
	}()
	for deadline := time.Now().Add(45 * time.Second); len(sleepers(marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel(nil)
			<-done //nolint:errcheck // waits for the goroutine to end; its error is not this check
			t.Fatalf("the tool's command never started: %+v", res)
		}
	}
	start := time.Now()
	cancel(cause)
	err := <-done
	t.Logf("claude and its tool ended %v after the cancel", time.Since(start))
	if !errors.Is(err, cause) || res == nil || res.Status != engine.Aborted {
		t.Errorf("Turn = %+v, %v; want aborted with the cause", res, err)
	}
	if left := sleepers(marker); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("the tool's command outlived the cancellation: %v", left)
	}
	clitest.NoneLeft(t, tn.RunID)
}

// sleepers lists the live processes whose command line holds marker.
func sleepers(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), marker) || strings.Contains(string(cmdline), "claude") {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

func TestE2ELengthLimit(t *testing.T) {
	t.Parallel()
	d, _ := e2e(t, modelserver.Reply{Text: "A long answer that was cut", Finish: "length"})
	res, err := d.Turn(context.Background(), newTurn(t, "Write a lot."))
	clitest.Record(t, res, "length.jsonl")
	if err != nil || res.Status != engine.Failed || !strings.Contains(strings.Join(res.Diagnostics, "\n"), "length limit") {
		t.Fatalf("Turn = %+v, %v; want failed at the length limit", res, err)
	}
}
