package agentcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/transcript"
)

func TestLineWriter(t *testing.T) {
	t.Parallel()
	var got []string
	w := NewLineWriter(func(n int, line []byte) { got = append(got, fmt.Sprintf("%d:%s", n, line)) })
	stream := "one\n\nthree\nlast"
	// Split writes anywhere, as a pipe does.
	for i := 0; i < len(stream); i += 3 {
		_, _ = w.Write([]byte(stream[i:min(i+3, len(stream))]))
	}
	w.Flush()
	if want := "1:one\n|2:\n|3:three\n|4:last"; strings.Join(got, "|") != want {
		t.Errorf("lines = %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	n := NewNotes("pi")
	for i := 1; i <= 5; i++ {
		n.Malformed(i, []byte(" oops \n"))
	}
	n.Add("a remark")
	n.Unknown(6, "brand_new")
	n.Unknown(7, "brand_new")
	want := []string{
		`line 1 of pi's output is not a JSON event: "oops"`,
		`line 2 of pi's output is not a JSON event: "oops"`,
		`line 3 of pi's output is not a JSON event: "oops"`,
		"a remark",
		`line 6: unknown pi event "brand_new" (ignored)`,
		"2 more lines were not JSON events",
	}
	if got := n.List(); strings.Join(got, "\n") != strings.Join(want, "\n") || n.MalformedLines() != 5 {
		t.Errorf("List = %q (%d malformed), want %q", got, n.MalformedLines(), want)
	}
}

func TestEnviron(t *testing.T) {
	t.Setenv("FLOW_TEST_DROPPED", "old")
	t.Setenv("FLOW_TEST_KEPT", "kept")
	env := Environ([]string{"FLOW_TEST_DROPPED"}, "FLOW_TEST_DROPPED=new", "FLOW_TEST_SET=1")
	got := strings.Join(env, "\n")
	for _, want := range []string{"FLOW_TEST_KEPT=kept", "FLOW_TEST_DROPPED=new", "FLOW_TEST_SET=1"} {
		if !strings.Contains(got, want) {
			t.Errorf("the environment lacks %s", want)
		}
	}
	if strings.Contains(got, "FLOW_TEST_DROPPED=old") {
		t.Error("the dropped variable is still there")
	}
	if v, ok := Lookup([]string{"K=1", "K=2"}, "K"); !ok || v != "2" {
		t.Errorf("Lookup = %q, %v; want the last one", v, ok)
	}
	if v, ok := Lookup(nil, "FLOW_TEST_KEPT"); !ok || v != "kept" {
		t.Errorf("Lookup = %q, %v; want the process's", v, ok)
	}
}

// echo is a Stream that keeps the lines it is fed and answers with the
// last one.
type echo struct{ lines []string }

func (e *echo) Feed(_ int, line []byte) { e.lines = append(e.lines, strings.TrimSpace(string(line))) }

func (e *echo) Outcome() Outcome {
	o := Outcome{Status: engine.Completed, Session: "s1", Steps: []transcript.Step{{Kind: "text", Text: "step"}}}
	if len(e.lines) > 0 {
		o.Output = e.lines[len(e.lines)-1]
	}
	return o
}

func TestTurn(t *testing.T) {
	t.Parallel()
	const key = "sk-agentcli-test"
	tests := []struct {
		name    string
		script  string
		session string
		status  engine.TurnStatus
		diag    string
	}{
		{name: "clean", script: "cat", status: engine.Completed},
		{name: "unclean exit", script: "cat; echo first >&2; echo 'the reason' >&2; exit 3", status: engine.Failed, diag: "sh exited with status 3: the reason"},
		{name: "another session", script: "cat", session: "s0", status: engine.Failed, diag: "sh started session s1 instead of continuing s0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := filepath.Join(t.TempDir(), "home") // not there yet: the transcript makes it
			tn := &engine.Turn{RunID: "agentclitest", Visit: "v", Agent: &flows.Agent{Name: "a"}, Prompt: "line one\nsay " + key + "\n",
				Home: home, Session: tt.session, Progress: func(engine.Progress) {}}
			e := &echo{}
			res, err := Turn(context.Background(), tn, Command{Name: "sh", Binary: "sh", Args: []string{"-c", tt.script}, Prompt: tn.Prompt}, e, key)
			if err != nil || res.Status != tt.status || res.Output != "say "+key || !strings.Contains(strings.Join(res.Diagnostics, "\n"), tt.diag) {
				t.Fatalf("Turn = %+v, %v; want %s with %q", res, err, tt.status, tt.diag)
			}
			b, err := os.ReadFile(res.Transcript)
			if err != nil || strings.Contains(string(b), key) || !strings.Contains(string(b), `{"raw":"say [redacted]"}`) {
				t.Errorf("transcript (%v):\n%s", err, b)
			}
			if turns, err := transcript.Turns(res.Transcript); err != nil || len(turns) != 1 || turns[0].Steps[0].Text != "step" {
				t.Errorf("Turns = %+v, %v", turns, err)
			}
		})
	}
}

func TestTurnWithoutHome(t *testing.T) {
	t.Parallel()
	tn := &engine.Turn{RunID: "agentclitest", Agent: &flows.Agent{Name: "a"}, Progress: func(engine.Progress) {}}
	res, err := Turn(context.Background(), tn, Command{Name: "sh", Binary: "sh", Args: []string{"-c", "echo hi"}}, &echo{}, "")
	if err != nil || res.Status != engine.Completed || res.Transcript != "" {
		t.Errorf("Turn = %+v, %v; want completed without a transcript", res, err)
	}
}

func TestRunUnavailableAndCancelled(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Command{Name: "x", Binary: "flow-no-such-cli"}, func(int, []byte) {})
	if !errors.Is(err, engine.ErrUnavailable) {
		t.Errorf("a missing CLI: %v, want ErrUnavailable", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the test cancels")
	cancel(cause)
	tn := &engine.Turn{RunID: "agentclitest", Agent: &flows.Agent{Name: "a"}, Progress: func(engine.Progress) {}}
	if _, err := Turn(ctx, tn, Command{Name: "sh", Binary: "sh", Args: []string{"-c", "sleep 5"}}, &echo{}, ""); !errors.Is(err, cause) {
		t.Errorf("a cancelled turn: %v, want the cause", err)
	}
}

// TestHugeStderrIsATail: a CLI that writes 20 MB to stderr leaves its
// last transcript.StderrLimit bytes, the reason it failed among them. On
// main the whole of it was kept.
func TestHugeStderrIsATail(t *testing.T) {
	t.Parallel()
	tn := &engine.Turn{RunID: "agentclitest", Agent: &flows.Agent{Name: "a"}, Progress: func(engine.Progress) {}}
	script := "head -c 20000000 /dev/zero | tr '\\0' e >&2; echo >&2; echo 'the reason' >&2; exit 3"
	res, err := Turn(context.Background(), tn, Command{Name: "sh", Binary: "sh", Args: []string{"-c", script}}, &echo{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stderr) > transcript.StderrLimit+100 || !strings.HasSuffix(res.Stderr, "e\nthe reason\n") ||
		!strings.HasPrefix(res.Stderr, "[the first ") {
		t.Errorf("stderr kept: %d bytes, %.80q … %q", len(res.Stderr), res.Stderr, res.Stderr[max(len(res.Stderr)-20, 0):])
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "sh exited with status 3: the reason") {
		t.Errorf("diagnostics = %q", res.Diagnostics)
	}
}
