package pi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/steps/proc"
)

// fakeKey is the key the tests hand pi; it must never reach a file.
const fakeKey = "sk-flow-test-pi-0123456789"

// binary returns the pi program, from PATH or the repository's .tools, or
// skips the test.
func binary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pi"); err == nil {
		return p
	}
	p, _ := filepath.Abs("../../.tools/node/node_modules/.bin/pi")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	t.Skip("pi is not installed: not on PATH nor in .tools/node/node_modules/.bin (run `go tool task deps`)")
	return ""
}

// e2e returns a driver pointed at a fresh model server, and the server.
func e2e(t *testing.T, replies ...modelserver.Reply) (*Driver, *modelserver.Server) {
	t.Helper()
	bin := binary(t)
	s := modelserver.Start(t, replies...)
	return New(Options{Binary: bin, BaseURL: s.URL() + "/v1", APIKeyEnv: "FLOW_TEST_PI_KEY",
		Env: []string{"FLOW_TEST_PI_KEY=" + fakeKey}, Grace: time.Second}), s
}

// newTurn returns a turn of a read-only agent on the test model.
func newTurn(t *testing.T, prompt string) *engine.Turn {
	t.Helper()
	return &engine.Turn{
		RunID:    fmt.Sprintf("pitest-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")),
		Visit:    "review#1/scout",
		Agent:    &flows.Agent{Name: "scout", Driver: "pi", Instructions: "You are terse & <careful>."},
		Model:    "test-model",
		Prompt:   prompt,
		Home:     t.TempDir(),
		WorkDir:  t.TempDir(),
		Timeout:  time.Minute,
		Progress: func(engine.Progress) {},
	}
}

// record keeps a turn's raw stream as a unit-test fixture when
// FLOW_RECORD=1.
func record(t *testing.T, res *engine.TurnResult, name string) {
	t.Helper()
	if os.Getenv("FLOW_RECORD") == "" || res == nil || res.Transcript == "" {
		return
	}
	b, err := os.ReadFile(res.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the last turn's stream, without the driver's header.
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(line, `{"type":"flow_turn"`) {
			keep = nil
		} else if line != "" {
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(filepath.Join("testdata", name), []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noKey fails the test if the fake key is in any file under dir.
func noKey(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), fakeKey) {
			t.Errorf("the API key is written in %s", path)
		}
		return nil
	})
}

func TestE2EPlain(t *testing.T) {
	t.Parallel()
	d, s := e2e(t, modelserver.Reply{Text: "Hello from the server.", Input: 120, Output: 7})
	tn := newTurn(t, "Say hello.")
	var mu sync.Mutex
	var progress []engine.Progress
	tn.Progress = func(p engine.Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() }
	start := time.Now()
	res, err := d.Turn(context.Background(), tn)
	t.Logf("plain turn took %v", time.Since(start))
	if err != nil || res.Status != engine.Completed || res.Output != "Hello from the server." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	record(t, res, "plain.jsonl")
	if res.Usage.Input == nil || *res.Usage.Input != 120 || *res.Usage.Output != 7 || *res.Usage.Turns != 1 {
		t.Errorf("usage = %+v", res.Usage)
	}
	if res.Session == "" {
		t.Error("no session id")
	}
	reqs := s.Requests()
	var gen []modelserver.Request
	for _, r := range reqs {
		if r.Path == "/v1/chat/completions" {
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
	if got := gen[0].Header.Get("Authorization"); got != "Bearer "+fakeKey {
		t.Errorf("Authorization = %q, want the key from the environment", got)
	}
	page, err := os.ReadFile(filepath.Join(tn.Home, "scout.html"))
	if err != nil || !strings.Contains(string(page), "Hello from the server.") {
		t.Errorf("no readable transcript: %v", err)
	}
	noKey(t, tn.Home)
	mu.Lock()
	defer mu.Unlock()
	if !hasActivity(progress, "writing") {
		t.Errorf("progress = %+v, want writing", progress)
	}
}

func hasActivity(ps []engine.Progress, activity string) bool {
	for _, p := range ps {
		if p.Activity == activity {
			return true
		}
	}
	return false
}

func TestE2EToolCall(t *testing.T) {
	t.Parallel()
	d, s := e2e(t,
		modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "ls", Arguments: `{"path":"."}`}},
		modelserver.Reply{Text: "I saw marker.txt."})
	tn := newTurn(t, "List the files.")
	if err := os.WriteFile(filepath.Join(tn.WorkDir, "marker.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress []engine.Progress
	tn.Progress = func(p engine.Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() }
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "I saw marker.txt." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	record(t, res, "tool.jsonl")
	if *res.Usage.Turns != 2 {
		t.Errorf("turns = %d, want 2", *res.Usage.Turns)
	}
	// The second request carries the tool's real result.
	var last string
	for _, r := range s.Requests() {
		if r.Path == "/v1/chat/completions" {
			last = string(r.Body)
		}
	}
	if !strings.Contains(last, "marker.txt") {
		t.Errorf("the tool result did not reach the model: %.500s", last)
	}
	mu.Lock()
	defer mu.Unlock()
	if !hasActivity(progress, "using ls") {
		t.Errorf("progress = %+v, want using ls", progress)
	}
}

func TestE2ETyped(t *testing.T) {
	t.Parallel()
	d, s := e2e(t, modelserver.Reply{Text: `{"approved":true,"remarks":[]}`})
	tn := newTurn(t, "Judge it.\n\n## Answer format\nAnswer with only a JSON value.")
	tn.OutputSchema = []byte(`{"type":"object","properties":{"approved":{"type":"boolean"}},"required":["approved"]}`)
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != `{"approved":true,"remarks":[]}` {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if n := len(s.Requests()); n == 0 {
		t.Fatal("no request")
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
	record(t, res2, "memory.jsonl")
	if res2.Session != res.Session {
		t.Errorf("session %q, want %q continued", res2.Session, res.Session)
	}
	var last string
	for _, r := range s.Requests() {
		if r.Path == "/v1/chat/completions" {
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
	record(t, res, "error500.jsonl")
	if took > 30*time.Second {
		t.Errorf("took %v, want under 30s", took)
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "500") {
		t.Errorf("diagnostics = %q, want the status", res.Diagnostics)
	}
}

func TestE2ECancel(t *testing.T) {
	t.Parallel()
	d, _ := e2e(t, modelserver.Reply{Text: strings.Repeat("slow words ", 200), ChunkDelay: 200 * time.Millisecond})
	tn := newTurn(t, "Talk slowly.")
	writing := make(chan struct{})
	var once sync.Once
	tn.Progress = func(p engine.Progress) {
		if p.Activity == "writing" {
			once.Do(func() { close(writing) })
		}
	}
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
	select {
	case <-writing:
	case <-time.After(45 * time.Second):
		t.Fatal("pi never started writing")
	}
	start := time.Now()
	cancel(cause)
	err := <-done
	t.Logf("pi ended %v after the cancel", time.Since(start))
	if !errors.Is(err, cause) || res == nil || res.Status != engine.Aborted {
		t.Errorf("Turn = %+v, %v; want aborted with the cause", res, err)
	}
	if n, _ := proc.KillTagged(tn.RunID, time.Second); n != 0 {
		t.Errorf("%d processes outlived the cancellation", n)
	}
}

func TestE2ELengthLimit(t *testing.T) {
	t.Parallel()
	d, _ := e2e(t, modelserver.Reply{Text: "A long answer that was cut", Finish: "length"})
	res, err := d.Turn(context.Background(), newTurn(t, "Write a lot."))
	if err != nil || res.Status != engine.Failed || !strings.Contains(strings.Join(res.Diagnostics, "\n"), "length limit") {
		t.Fatalf("Turn = %+v, %v; want failed at the length limit", res, err)
	}
	record(t, res, "length.jsonl")
}
