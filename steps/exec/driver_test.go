package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	flowrecord "github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/proc"
)

// turn returns a turn of an agent that runs script with sh.
func turn(t *testing.T, script string) *engine.Turn {
	t.Helper()
	return &engine.Turn{
		RunID:    fmt.Sprintf("test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")),
		Visit:    "review#2/verdict",
		Agent:    &flows.Agent{Name: "scripted", Driver: "exec", Command: []string{"sh", "-c", script}},
		Model:    "test/model",
		Prompt:   "Say something.\n",
		Home:     t.TempDir(),
		WorkDir:  t.TempDir(),
		Progress: func(engine.Progress) {},
	}
}

func ptr[T any](v T) *T { return &v }

func TestTurn(t *testing.T) { // not parallel: it sets the environment
	tests := []struct {
		name   string
		script string
		schema []byte
		status engine.TurnStatus
		output string
		stderr string
		diag   string // a substring of the diagnostics, "" for none
	}{
		{name: "answer is stdout", script: "echo hello; echo world", status: engine.Completed, output: "hello\nworld"},
		{name: "prompt on stdin", script: "cat", status: engine.Completed, output: "Say something."},
		{
			name:   "environment",
			script: `echo "$FLOW_MODEL|$FLOW_VISIT|$FLOW_RUN|${FLOW_OUTPUT_SCHEMA-unset}"`,
			status: engine.Completed,
			output: "test/model|review#2/verdict|RUN|unset",
		},
		{
			name:   "output schema",
			script: `echo "$FLOW_OUTPUT_SCHEMA"`,
			schema: []byte(`{"type":"object"}`),
			status: engine.Completed,
			output: `{"type":"object"}`,
		},
		{name: "working directory", script: `pwd`, status: engine.Completed, output: "WORKDIR"},
		{
			name:   "non-zero exit",
			script: "echo partial; echo first >&2; echo 'out of quota' >&2; exit 4",
			status: engine.Failed,
			output: "partial",
			stderr: "first\nout of quota\n",
			diag:   "sh exited with status 4: out of quota",
		},
		{name: "killed by signal", script: "kill -KILL $$", status: engine.Failed, diag: "killed by signal 9"},
		{name: "no answer", script: "echo thinking >&2", status: engine.Failed, stderr: "thinking\n", diag: "no answer"},
		{name: "blank answer", script: "printf '  \\n\\n'", status: engine.Failed, output: "  ", diag: "no answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FLOW_OUTPUT_SCHEMA", "inherited")
			tn := turn(t, tt.script)
			tn.OutputSchema = tt.schema
			got, err := New(Options{}).Turn(context.Background(), tn)
			if err != nil {
				t.Fatalf("Turn: %v", err)
			}
			want := strings.NewReplacer("RUN", tn.RunID, "WORKDIR", tn.WorkDir).Replace(tt.output)
			if got.Status != tt.status || got.Output != want || got.Stderr != tt.stderr {
				t.Errorf("Turn = %s %q stderr %q, want %s %q stderr %q", got.Status, got.Output, got.Stderr, tt.status, want, tt.stderr)
			}
			diags := strings.Join(got.Diagnostics, "\n")
			if (tt.diag == "") != (diags == "") || !strings.Contains(diags, tt.diag) {
				t.Errorf("diagnostics = %q, want one containing %q", diags, tt.diag)
			}
			if got.Usage.Turns == nil || *got.Usage.Turns != 1 || got.Usage.Input != nil || got.Usage.Cost != nil {
				t.Errorf("usage = %+v, want one turn and no tokens or cost", got.Usage)
			}
		})
	}
}

func TestUsageReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stderr string
		want   flowrecord.Usage
		diag   bool
	}{
		{name: "none", stderr: "log line\n", want: flowrecord.Usage{Turns: ptr[int64](1)}},
		{
			name:   "reported",
			stderr: "log line\nFLOW_USAGE {\"input\":120,\"output\":30,\"cost\":0.25}\n\n",
			want:   flowrecord.Usage{Input: ptr[int64](120), Output: ptr[int64](30), Cost: ptr(0.25), Turns: ptr[int64](1)},
		},
		{
			name:   "every field",
			stderr: `FLOW_USAGE {"input":1,"output":2,"cache_read":3,"cache_write":4,"cost":0,"turns":5}`,
			want: flowrecord.Usage{
				Input: ptr[int64](1), Output: ptr[int64](2), CacheRead: ptr[int64](3), CacheWrite: ptr[int64](4),
				Cost: ptr(0.0), Turns: ptr[int64](5),
			},
		},
		{name: "not the last line", stderr: "FLOW_USAGE {\"input\":1}\nlater\n", want: flowrecord.Usage{Input: ptr[int64](1), Turns: ptr[int64](1)}},
		{
			name:   "a later total replaces the earlier",
			stderr: "FLOW_USAGE {\"input\":1,\"output\":1}\nFLOW_USAGE {\"input\":5,\"output\":2}\n",
			want:   flowrecord.Usage{Input: ptr[int64](5), Output: ptr[int64](2), Turns: ptr[int64](1)},
		},
		{name: "malformed: unknown", stderr: "FLOW_USAGE {input:1}\n", want: flowrecord.Usage{Turns: ptr[int64](1), Unknown: true}, diag: true},
	}
	for _, tt := range tests {
		got, diags := readUsage(tt.stderr, true)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: usage = %s, want %s", tt.name, show(got), show(tt.want))
		}
		if (len(diags) > 0) != tt.diag {
			t.Errorf("%s: diagnostics = %q, want some: %v", tt.name, diags, tt.diag)
		}
	}

	// And through a real program.
	tn := turn(t, `echo ok; echo 'FLOW_USAGE {"input":7,"output":3}' >&2`)
	got, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || got.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", got, err)
	}
	if got.Usage.Input == nil || *got.Usage.Input != 7 || got.Usage.Cost != nil || got.Usage.WallMS < 0 {
		t.Errorf("usage = %s", show(got.Usage))
	}
}

// readUsage reads the usage reports of stderr, written in pieces as a
// pipe splits them.
func readUsage(stderr string, final bool) (flowrecord.Usage, []string) {
	r := newReports(func(engine.Progress) {})
	for i := 0; i < len(stderr); i += 5 {
		_, _ = r.Write([]byte(stderr[i:min(i+5, len(stderr))]))
	}
	return r.usage(final)
}

func show(u flowrecord.Usage) string {
	b, _ := json.Marshal(u)
	return string(b)
}

// Not parallel: it writes a program and then runs it, and a process that
// another test forks meanwhile holds the file open for writing until it
// execs, so running the program fails with "text file busy".
func TestSourceRelativeCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agents")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"from $(basename \"$0\") $1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "answer.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tn := turn(t, "")
	tn.Agent = &flows.Agent{Name: "a", Command: []string{"./bin/answer.sh", "arg"}, Source: filepath.Join(dir, "a.md")}
	got, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || got.Output != "from answer.sh arg" {
		t.Errorf("Turn = %+v, %v; want the script beside the agent file", got, err)
	}

	// Without a source, ./ is relative to the working directory.
	tn.Agent = &flows.Agent{Name: "a", Command: []string{"./bin/answer.sh"}}
	if _, err := New(Options{}).Turn(context.Background(), tn); !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("Turn without source = %v, want unavailable (no such file in the working directory)", err)
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, command := range [][]string{{"flow-no-such-agent"}, {notExec}, nil} {
		tn := turn(t, "")
		tn.Agent.Command = command
		got, err := New(Options{}).Turn(context.Background(), tn)
		if !errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("%v: Turn = %+v, %v; want an error wrapping ErrUnavailable", command, got, err)
		}
	}
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	tn := turn(t, "echo answer; exit 2")
	tn.Agent.Name = "re/viewer"
	var got *engine.TurnResult
	for range 2 {
		var err error
		got, err = New(Options{}).Turn(context.Background(), tn)
		if err != nil {
			t.Fatal(err)
		}
	}
	want := filepath.Join(tn.Home, "re_viewer.jsonl")
	if got.Transcript != want {
		t.Fatalf("transcript = %q, want %q", got.Transcript, want)
	}
	f, err := os.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines int
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		for k, v := range map[string]any{"visit": tn.Visit, "model": tn.Model, "prompt": tn.Prompt, "answer": "answer", "exit": 2.0} {
			if r[k] != v {
				t.Errorf("line %d: %s = %v, want %v", lines+1, k, r[k], v)
			}
		}
		if _, ok := r["wall_ms"].(float64); !ok {
			t.Errorf("line %d: no wall_ms", lines+1)
		}
	}
	if lines != 2 {
		t.Errorf("transcript has %d lines, want 2", lines)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	ready := filepath.Join(t.TempDir(), "ready")
	tn := turn(t, `setsid sleep 60 & echo "thinking" >&2; touch "$READY"; while :; do sleep 0.05; done`)
	tn.Agent.Command = []string{"sh", "-c", "READY=" + ready + "; " + tn.Agent.Command[2]}
	var (
		mu       sync.Mutex
		progress []engine.Progress
	)
	tn.Progress = func(p engine.Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() }
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("timeout")
	type outcome struct {
		res *engine.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := New(Options{Grace: grace}).Turn(ctx, tn)
		done <- outcome{res, err}
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("agent never started")
		}
	}
	start := time.Now()
	cancel(cause)
	o := <-done
	if took := time.Since(start); took > grace+time.Second {
		t.Errorf("Turn took %v after cancel", took)
	}
	if !errors.Is(o.err, cause) || o.res == nil || o.res.Status != engine.Aborted || o.res.Stderr != "thinking\n" {
		t.Errorf("Turn = %+v, %v; want aborted with stderr and %v", o.res, o.err, cause)
	}
	if n, _ := proc.KillTagged(tn.RunID, grace); n != 0 {
		t.Errorf("%d processes outlived the cancellation", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 1 || progress[0].Activity != "running sh" {
		t.Errorf("progress = %+v, want one %q", progress, "running sh")
	}
}
