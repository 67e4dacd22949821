package exec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/internal/secret"
)

// An agent that closes stdout but keeps running: the answer is taken when
// stdout closes, the program gets Linger to exit, then it is ended and the
// turn says so — instead of waiting out the whole timeout.
func TestHostileAnswerReceivedProcessDidNotExit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, script string
		status       engine.TurnStatus
		diag         string
	}{
		{name: "answer", script: "echo the answer; exec >&-; sleep 30", status: engine.Completed, diag: "answer received, process did not exit"},
		{name: "no answer", script: "exec >&-; sleep 30", status: engine.Failed, diag: "no answer: sh closed its output without one"},
		{name: "a helper keeps running", script: "echo the answer; sleep 30 >/dev/null & exec >&-; wait", status: engine.Completed, diag: "answer received"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn := turn(t, tt.script)
			var mu sync.Mutex
			var progress []string
			tn.Progress = func(p engine.Progress) { mu.Lock(); progress = append(progress, p.Activity); mu.Unlock() }
			start := time.Now()
			res, err := New(Options{Linger: 300 * time.Millisecond, Grace: 300 * time.Millisecond}).Turn(context.Background(), tn)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the turn took %v: the lingering program was not ended", took)
			}
			if err != nil || res.Status != tt.status || !strings.Contains(strings.Join(res.Diagnostics, "\n"), tt.diag) {
				t.Fatalf("Turn = %+v, %v; want %s with %q", res, err, tt.status, tt.diag)
			}
			if tt.status == engine.Completed && res.Output != "the answer" {
				t.Errorf("answer %q", res.Output)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(strings.Join(progress, "\n"), "answer received, sh did not exit") {
				t.Errorf("progress %q does not say the answer arrived", progress)
			}
			if n, _ := proc.KillTagged(tn.RunID, time.Second); n != 0 {
				t.Errorf("%d processes outlived the turn", n)
			}
		})
	}
}

// An answer longer than engine.AnswerLimit is stored once, whole, in its
// answer file; the result, the transcript line and the live log carry its
// start and the file.
func TestHostileLongAnswerIsStoredOnce(t *testing.T) {
	t.Parallel()
	const size = 3 << 20
	tn := turn(t, "head -c "+strconv.Itoa(size)+" /dev/zero | tr '\\0' a; echo "+testKey+" >&2")
	tn.Secrets = secret.New(testKey)
	res, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if len(res.Output) != engine.AnswerLimit || res.File == "" || res.Size != size {
		t.Fatalf("Output %d bytes, File %q, Size %d; want the prefix, a file and the whole size", len(res.Output), res.File, res.Size)
	}
	if st, err := os.Stat(res.File); err != nil || st.Size() != size {
		t.Fatalf("the answer file: %v %v", st, err)
	}
	total := int64(0)
	entries, _ := os.ReadDir(tn.Home)
	for _, e := range entries {
		st, _ := e.Info()
		total += st.Size()
		b, _ := os.ReadFile(filepath.Join(tn.Home, e.Name()))
		if strings.Contains(string(b), testKey) {
			t.Errorf("%s holds the key", e.Name())
		}
	}
	if total > size+4*engine.AnswerLimit {
		t.Errorf("the home holds %d bytes for a %d-byte answer: it is stored more than once", total, size)
	}
}

const testKey = "sk-exec-hostile-0123456789"
