package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/internal/sandbox"
	"github.com/flowrun/flow/rundir"
)

// The native agent's task: calc.sh adds wrongly, and test.sh says so.
const (
	nativeCalc = "add() { echo $(( $1 - $2 )); }\n"
	nativeTest = `. ./calc.sh
got=$(add 2 3)
if [ "$got" != 5 ]; then echo "FAIL: add 2 3 = $got, want 5"; exit 1; fi
echo PASS
`
	nativeFlow = `name: fix
agents: [./agents]
nodes:
  - id: fix
    agent: coder
    isolation: worktree
    prompt: Make test.sh pass. {{PAD}}
`
	nativeAgent = `---
name: coder
description: fixes failing tests
driver: native
model: test-model
base_url: {{URL}}
tools: [bash, read, edit]
max_steps: 12
---
You fix failing tests.
`
)

// nativeRepo makes the task's repository with a native coder agent that
// talks to srv; pad is appended to the prompt.
func nativeRepo(t *testing.T, env []string, srv *modelserver.Server, pad string) string {
	t.Helper()
	return repoWith(t, env, map[string]string{
		"calc.sh": nativeCalc, "test.sh": nativeTest,
		"fix.yaml":        strings.Replace(nativeFlow, "{{PAD}}", pad, 1),
		"agents/coder.md": strings.Replace(nativeAgent, "{{URL}}", srv.URL(), 1),
	})
}

// toolResults is how many tool results a request carries, by either
// protocol: the step the conversation is at.
func toolResults(r modelserver.Request) int {
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &body)
	n := 0
	for _, m := range body.Messages {
		if m.Role == "tool" || m.Role == "user" && strings.HasPrefix(m.Content, "Result of ") {
			n++
		}
	}
	return n
}

// script answers request k (k tool results so far) with call k, by the
// native protocol or, text, as a fenced block; past the calls, with done.
func script(calls [][2]string, text bool, done string) func(modelserver.Request) modelserver.Reply {
	return func(r modelserver.Request) modelserver.Reply {
		k := toolResults(r)
		if k >= len(calls) {
			return modelserver.Reply{Text: done}
		}
		name, args := calls[k][0], calls[k][1]
		if text {
			return modelserver.Reply{Text: fmt.Sprintf("Step %d.\n```tool\n{\"name\": %q, \"arguments\": %s}\n```", k+1, name, args)}
		}
		return modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: name, Arguments: args}}
	}
}

func bashArgs(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return string(b)
}

// fixCalls are the calls that fix the task, with a write outside the
// working copy and a connection to the network between them.
func fixCalls(outside, port string) [][2]string {
	return [][2]string{
		{"bash", bashArgs("sh test.sh")},
		{"read", `{"path": "calc.sh"}`},
		{"edit", `{"path": "calc.sh", "old": "$1 - $2", "new": "$1 + $2"}`},
		{"bash", bashArgs("echo pwned > " + outside)},
		{"bash", bashArgs("exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected")},
		{"bash", bashArgs("sh test.sh")},
	}
}

func needSandbox(t *testing.T) {
	t.Helper()
	sandbox.SetHelper(flowBinary(t)) // as flow itself does, before it detects
	if kind, _, why := sandbox.Detect(); kind == sandbox.None {
		clitest.Missing(t, "no sandbox on this machine (bubblewrap, or Landlock as root): %s", why)
	}
}

// toolFacts are the tool facts of a run's journal.
func toolFacts(t *testing.T, run string) []*record.Fact {
	t.Helper()
	facts, err := rundir.ReadJournal(run)
	if err != nil {
		t.Fatal(err)
	}
	var out []*record.Fact
	for _, f := range facts {
		if f.Tool != nil {
			out = append(out, f)
		}
	}
	return out
}

// checkFixed: the fix is on the run's branch, the user's tree is as it
// was, and nothing was written outside the working copy.
func checkFixed(t *testing.T, env []string, dir, run, outside string) {
	t.Helper()
	id := filepath.Base(run)
	if got := gitCmd(t, env, dir, "show", "flow/"+id+":calc.sh"); !strings.Contains(got, "$1 + $2") {
		t.Errorf("the run's branch does not hold the fix:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.sh")); string(b) != nativeCalc {
		t.Errorf("the user's calc.sh changed:\n%s", b)
	}
	if st := gitCmd(t, env, dir, "status", "--porcelain"); st != "" {
		t.Errorf("the user's tree is not clean:\n%s", st)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("a tool wrote %s, outside its working copy", outside)
	}
}

// TestNativeFixesFailingTest: a native agent fixes a failing test in its
// worktree through tool calls against the scripted server; the fix lands
// on the run's branch and the user's tree is untouched; its write outside
// the working copy and its connection to the network fail inside the
// sandbox; every call is a tool fact with its result.
func TestNativeFixesFailingTest(t *testing.T) {
	needSandbox(t)
	for _, kind := range []string{"bubblewrap", "landlock"} {
		t.Run(kind, func(t *testing.T) { testNativeFix(t, kind) })
	}
}

func testNativeFix(t *testing.T, kind string) {
	if _, err := exec.LookPath("bwrap"); err != nil && kind == "bubblewrap" {
		t.Skip("no bwrap here: the Landlock case runs")
	}
	env := append(gitEnv(t), "FLOW_SANDBOX="+kind)
	srv := modelserver.Start(t)
	u, _ := url.Parse(srv.URL())
	outside := filepath.Join(t.TempDir(), "hacked.txt")
	calls := fixCalls(outside, u.Port())
	srv.Handle(script(calls, false, "Fixed: add used - instead of +."))
	dir := nativeRepo(t, env, srv, "")
	out, err := flowIn(t, env, dir, "run", "fix.yaml")
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	run := onlyRun(t, dir)
	checkFixed(t, env, dir, run, outside)
	tools := toolFacts(t, run)
	if len(tools) != len(calls) {
		t.Fatalf("%d tool facts for %d calls", len(tools), len(calls))
	}
	for i, f := range tools {
		c := f.Tool
		if c.Seq != i+1 || c.Name != calls[i][0] || c.Args != calls[i][1] || c.Protocol != "native" || f.Visit != "fix" {
			t.Errorf("tool fact %d: %+v", i+1, c)
		}
	}
	if r := tools[0].Tool; !r.Error || !strings.Contains(r.Result, "FAIL: add 2 3 = -1") {
		t.Errorf("the first test run's result: %+v", r)
	}
	if r := tools[3].Tool; !r.Error || !strings.Contains(r.Result, "Read-only file system") && !strings.Contains(r.Result, "Permission denied") {
		t.Errorf("the write outside did not fail in the sandbox: %+v", r)
	}
	if r := tools[4].Tool; !r.Error || strings.Contains(r.Result, "connected") {
		t.Errorf("the connection did not fail in the sandbox: %+v", r)
	}
	if r := tools[5].Tool; r.Error || !strings.Contains(r.Result, "PASS") {
		t.Errorf("the last test run's result: %+v", r)
	}
	// flow tail shows each call and its result.
	tail, err := flowIn(t, env, dir, "tail", "--raw=false", filepath.Base(run), "fix")
	if err != nil {
		t.Fatalf("flow tail: %v\n%s", err, tail)
	}
	for _, want := range []string{"→ bash", "← exit 1 FAIL: add 2 3 = -1", "→ edit", "echo pwned", "← exit 0 PASS"} {
		if !strings.Contains(tail, want) {
			t.Errorf("flow tail does not show %q:\n%s", want, tail)
		}
	}
	// The server saw each request once: one per step and the answer.
	if n := len(srv.Bills()); n != len(calls)+1 {
		t.Errorf("the server answered %d requests, want %d", n, len(calls)+1)
	}
	// flow test answers the native turn from the run, offline: no request,
	// no call made again, and its change lands again.
	out, err = flowIn(t, env, dir, "test", "--cassette", run, "fix.yaml")
	if err != nil {
		t.Errorf("flow test --cassette: %v\n%s", err, out)
	}
	if n := len(srv.Bills()); n != len(calls)+1 {
		t.Errorf("flow test sent %d requests to the server", n-len(calls)-1)
	}
}

// TestNativeTextProtocol: a server that refuses requests with tools gets
// the same task done by the text protocol, and the facts say so.
func TestNativeTextProtocol(t *testing.T) {
	needSandbox(t)
	env := gitEnv(t)
	srv := modelserver.Start(t)
	u, _ := url.Parse(srv.URL())
	outside := filepath.Join(t.TempDir(), "hacked.txt")
	calls := fixCalls(outside, u.Port())
	answer := script(calls, true, "Fixed.")
	srv.Handle(func(r modelserver.Request) modelserver.Reply {
		if _, ok := r.JSON()["tools"]; ok {
			return modelserver.Reply{Status: 400, Message: "this server does not support tools"}
		}
		return answer(r)
	})
	dir := nativeRepo(t, env, srv, "")
	out, err := flowIn(t, env, dir, "run", "fix.yaml")
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	run := onlyRun(t, dir)
	checkFixed(t, env, dir, run, outside)
	tools := toolFacts(t, run)
	if len(tools) != len(calls) {
		t.Fatalf("%d tool facts for %d calls", len(tools), len(calls))
	}
	for i, f := range tools {
		if f.Tool.Protocol != "text" || f.Tool.Name != calls[i][0] {
			t.Errorf("tool fact %d: %+v", i+1, f.Tool)
		}
	}
}

// TestNativeContextTruncated: a server that counts far fewer prompt tokens
// than it was sent fails the turn provider, saying the context was
// truncated.
func TestNativeContextTruncated(t *testing.T) {
	env := gitEnv(t)
	srv := modelserver.Start(t, modelserver.Reply{Text: "I see a short prompt.", Input: 300})
	dir := nativeRepo(t, env, srv, strings.Repeat("Context the model must see. ", 400))
	out, err := flowIn(t, env, dir, "run", "fix.yaml")
	if err == nil {
		t.Fatalf("flow run succeeded:\n%s", out)
	}
	if !strings.Contains(out, "context truncated") {
		t.Errorf("the output does not say the context was truncated:\n%s", out)
	}
	facts, err := rundir.ReadJournal(onlyRun(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "fix" {
			if f.Error == nil || f.Error.Kind != "provider" || !strings.Contains(f.Error.Message, "context truncated") {
				t.Errorf("the visit's end: %+v", f.Error)
			}
			return
		}
	}
	t.Error("the journal has no end of the visit")
}

// TestNativeResumeAfterKill: flow is killed (-9) after the second of four
// tool calls, while the third request waits on the server; flow resume
// rebuilds the conversation from the tool facts: calls 1 and 2 are not
// made again, the requests that led to them are not sent again, and the
// turn completes.
func TestNativeResumeAfterKill(t *testing.T) {
	needSandbox(t)
	env := gitEnv(t)
	srv := modelserver.Start(t)
	var calls [][2]string
	for i := 1; i <= 4; i++ {
		calls = append(calls, [2]string{"bash", bashArgs(fmt.Sprintf("echo %d >> calls.log", i))})
	}
	answer := script(calls, false, "Four calls made.")
	held := make(chan struct{})
	var once sync.Once
	srv.Handle(func(r modelserver.Request) modelserver.Reply {
		if toolResults(r) == 2 {
			first := false
			once.Do(func() { first = true })
			if first {
				close(held) // the first run's third request: kill it now
				time.Sleep(2 * time.Second)
			}
		}
		return answer(r)
	})
	dir := nativeRepo(t, env, srv, "")
	cmd := exec.Command(flowBinary(t), "run", "fix.yaml")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the third request never came:\n%s", stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	run := onlyRun(t, dir)
	if n := len(toolFacts(t, run)); n != 2 {
		t.Fatalf("the killed run journaled %d tool calls, want 2", n)
	}
	out, err := flowIn(t, env, dir, "resume", filepath.Base(run))
	if err != nil {
		t.Fatalf("flow resume: %v\n%s", err, out)
	}
	tools := toolFacts(t, run)
	if len(tools) != 4 {
		t.Fatalf("%d tool facts, want 4", len(tools))
	}
	for i, f := range tools {
		if f.Tool.Seq != i+1 || f.Tool.Args != calls[i][1] || f.Tool.Turn != tools[0].Tool.Turn {
			t.Errorf("tool fact %d: %+v", i+1, f.Tool)
		}
	}
	id := filepath.Base(run)
	if got := gitCmd(t, env, dir, "show", "flow/"+id+":calls.log"); got != "1\n2\n3\n4" {
		t.Errorf("the calls made: %q, want each of 1–4 once", got)
	}
	seen := map[int]int{}
	for _, r := range srv.Requests() {
		if r.Path == "/v1/chat/completions" {
			seen[toolResults(r)]++
		}
	}
	if seen[0] != 1 || seen[1] != 1 || seen[3] != 1 || seen[4] != 1 {
		t.Errorf("requests by step: %v; want the first two and the last two once each", seen)
	}
	if seen[2] > 2 {
		t.Errorf("the third request was sent %d times: once before the kill, once after", seen[2])
	}
}

const boxedFlow = `name: boxed
agents:
  - name: boxer
    description: a sandboxed exec agent
    driver: exec
    sandbox: on
    command: [bash, -c, 'cat >/dev/null; if echo x > OUTSIDE/agent.txt; then echo wrote-outside; fi; echo "key=[$SECRET_TOKEN]"; echo agent > agent-inside.txt']
nodes:
  - id: cmd
    run: 'if echo x > OUTSIDE/run.txt; then echo wrote-outside; fi; echo "key=[$SECRET_TOKEN]"; echo run > run-inside.txt'
    sandbox: on
  - id: agent
    agent: boxer
    prompt: go
`

// TestSandboxOnForExecAndRun: an exec agent and a run node that say
// sandbox: on write in their working directory, not outside it, and get
// no keys.
func TestSandboxOnForExecAndRun(t *testing.T) {
	needSandbox(t)
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "boxed.yaml"), []byte(strings.ReplaceAll(boxedFlow, "OUTSIDE", outside)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := flowIn(t, []string{"SECRET_TOKEN=sk-very-secret-value"}, dir, "run", "boxed.yaml")
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	facts, err := rundir.ReadJournal(onlyRun(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Type != record.FactEnd {
			continue
		}
		text := fmt.Sprint(f.Output)
		if strings.Contains(text, "wrote-outside") || !strings.Contains(text, "key=[]") {
			t.Errorf("%s: %s", f.Visit, text)
		}
	}
	for _, name := range []string{"run-inside.txt", "agent-inside.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was not written in the working directory: %v", name, err)
		}
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("written outside: %v", left)
	}
}

// TestNativePreflight: flow validate --preflight checks a native agent's
// server and its sandbox, and names the driver when the server is down.
func TestNativePreflight(t *testing.T) {
	needSandbox(t)
	env := gitEnv(t)
	srv := modelserver.Start(t)
	dir := nativeRepo(t, env, srv, "")
	out, err := flowIn(t, env, dir, "validate", "--preflight", "fix.yaml")
	if err != nil || !strings.Contains(out, "driver native: server "+srv.URL()+" takes connections; sandbox ") {
		t.Errorf("preflight with the server up: %v\n%s", err, out)
	}
	out, err = flowIn(t, append(env, "FLOW_SANDBOX=none"), dir, "validate", "--preflight", "fix.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "none works here") || !strings.Contains(out, "sandbox: off") {
		t.Errorf("preflight with no sandbox: exit %d\n%s", code, out)
	}
	out, err = flowIn(t, append(env, "FLOW_SANDBOX=landlock"), dir, "validate", "--preflight", "fix.yaml")
	if err != nil || !strings.Contains(out, "sandbox landlock") && !strings.Contains(out, "sandbox bubblewrap") {
		t.Errorf("preflight under Landlock: %v\n%s", err, out)
	}
	srv.Close()
	out, err = flowIn(t, env, dir, "validate", "--preflight", "fix.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "driver native") || !strings.Contains(out, "FLOW_DRIVERS_NATIVE_BASE_URL") && !strings.Contains(out, "base_url") {
		t.Errorf("preflight with the server down: exit %d\n%s", code, out)
	}
}
