package pi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// fakeKey is the key the tests hand pi; it must never reach a file.
const fakeKey = "sk-flow-test-pi-0123456789"

// e2e returns a driver pointed at a fresh model server, and the server.
func e2e(t *testing.T, replies ...modelserver.Reply) (*Driver, *modelserver.Server) {
	t.Helper()
	bin := clitest.Binary(t, "pi")
	s := modelserver.Start(t, replies...)
	return New(Options{Binary: bin, BaseURL: s.URL() + "/v1", APIKeyEnv: "FLOW_TEST_PI_KEY",
		Env: []string{"FLOW_TEST_PI_KEY=" + fakeKey}, Grace: time.Second}), s
}

// newTurn returns a turn of a read-only agent on the test model.
func newTurn(t *testing.T, prompt string) *engine.Turn {
	t.Helper()
	return clitest.Turn(t, &flows.Agent{Name: "scout", Driver: "pi", Instructions: "You are terse & <careful>."}, prompt)
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
	clitest.NoKey(t, tn.Home, fakeKey)
	if !progress.Has("writing") {
		t.Errorf("progress = %s, want writing", &progress)
	}
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
	var progress clitest.Progress
	tn.Progress = progress.Record
	var facts []record.ToolCall
	tn.Tools = &record.ToolLog{Record: func(c record.ToolCall) error { facts = append(facts, c); return nil }}
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "I saw marker.txt." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	clitest.Record(t, res, "tool.jsonl")
	if *res.Usage.Turns != 2 {
		t.Errorf("turns = %d, want 2", *res.Usage.Turns)
	}
	// The call is journalled for the trace, with the first answer's usage
	// as billed: the second answer's is the rest of the turn's.
	bills := s.Bills()
	if len(facts) != 1 || facts[0].Name != "ls" || facts[0].ID == "" || facts[0].Protocol != "pi" || facts[0].Error ||
		facts[0].Usage == nil || len(bills) != 2 || facts[0].Usage.Tokens() != bills[0].Tokens() ||
		res.Usage.Tokens()-facts[0].Usage.Tokens() != bills[1].Tokens() {
		t.Errorf("tool facts = %+v; bills %+v; usage %+v", facts, bills, res.Usage)
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
	if !progress.Has("using ls") {
		t.Errorf("progress = %s, want using ls", &progress)
	}
	clitest.NoKey(t, tn.Home, fakeKey) // nor after running a tool
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
	clitest.Record(t, res2, "memory.jsonl")
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
	clitest.NoneLeft(t, tn.RunID)
}

func TestE2ELengthLimit(t *testing.T) {
	t.Parallel()
	d, _ := e2e(t, modelserver.Reply{Text: "A long answer that was cut", Finish: "length"})
	res, err := d.Turn(context.Background(), newTurn(t, "Write a lot."))
	if err != nil || res.Status != engine.Failed || !strings.Contains(strings.Join(res.Diagnostics, "\n"), "length limit") {
		t.Fatalf("Turn = %+v, %v; want failed at the length limit", res, err)
	}
	clitest.Record(t, res, "length.jsonl")
}
