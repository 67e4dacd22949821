package main

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// The hostile cases of keys kept out of the run directory (issue 23):
// a key split across the chunks of a stream, spellings of a key, and
// secrets too short or too common to redact.

// TestHostileKeySplitAcrossChunks: a model server that streams the key
// back in 1-byte chunks, then split at random places: for every driver
// (the real pi, claude and codex CLIs, and the openai driver), no file of
// the run directory holds the key, nor do the texts of one field of a
// JSONL file give it back when joined (clitest.NoJoinedKey), nor does
// flow's output show it. On main the transcripts kept the stream chunk by
// chunk and joining the chunks gave back the key.
func TestHostileKeySplitAcrossChunks(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		s := modelserver.Start(t)
		var mu sync.Mutex
		rng := rand.New(rand.NewPCG(3, 5))
		seen := 0
		s.Handle(func(r modelserver.Request) modelserver.Reply {
			k := keyOf(r)
			text := "your key is " + k + ", again: " + k + "."
			mu.Lock()
			defer mu.Unlock()
			seen++
			var chunks []string
			for len(text) > 0 {
				n := 1
				if seen > 1 {
					n = min(1+rng.IntN(9), len(text))
				}
				chunks = append(chunks, text[:n])
				text = text[n:]
			}
			return modelserver.Reply{Chunks: chunks}
		})
		flow := `name: f
agents: [./agents]
nodes:
  - {id: first, agent: helper, prompt: say it}
  - {id: second, agent: helper, prompt: say it again}
`
		run, out, err := runFlowResult(t, dc, s, flow)
		if err != nil {
			t.Fatalf("flow run: %v\n%s", err, out)
		}
		if !strings.Contains(out, "[redacted]") || strings.Contains(out, cliKey) {
			t.Errorf("flow run's output, want the answer redacted:\n%s", out)
		}
		if n := clitest.NoJoinedKey(t, run, cliKey); n < 5 {
			t.Errorf("the run has %d files", n)
		}
		if len(bodies(s, dc)) == 0 {
			t.Error("the model server was never asked")
		}
	})
}

// TestHostileCommonWordSecrets: secrets whose values are common words
// (status, passed, output) or part of flow's own keys (_timeout) leave
// the run directory loadable and flow show readable; the short ones are
// not redacted, with one warning each that names the variable and not
// the value. On main they were redacted inside flow's own JSON keys: the
// snapshot no longer loaded and flow show printed garbage.
func TestHostileCommonWordSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := `name: f
agents:
  - {name: printer, description: prints, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "status passed output"']}
nodes:
  - {id: print, agent: printer, prompt: x}
  - {id: shell, run: 'echo "the output is ok"'}
`
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"STATUS_TOKEN=status", "PASSED_API_KEY=passed", "OUTPUT_SECRET=output", "TIMEOUT_PASSWORD=_timeout",
		"CONCURRENCY_KEY=concurrency"}
	flow1 := func(args ...string) (string, string) {
		cmd := exec.Command(flowBinary(t), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("flow %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	stdout, stderr := flow1("run", "f.yaml")
	if !strings.Contains(stdout, `"passed": true`) || !strings.Contains(stdout, "the output is ok") {
		t.Errorf("flow run's stdout lost the words:\n%s", stdout)
	}
	for _, name := range []string{"STATUS_TOKEN", "PASSED_API_KEY", "OUTPUT_SECRET", "CONCURRENCY_KEY"} {
		if n := strings.Count(stderr, "warning: "+name+" "); n != 1 {
			t.Errorf("flow run warned %d times of %s, want once:\n%s", n, name, stderr)
		}
	}
	if strings.Contains(stderr, "TIMEOUT_PASSWORD") {
		t.Errorf("_timeout is long enough to redact, and not a word flow writes; flow warned:\n%s", stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	snap, err := rundir.ReadSnapshot(runs[0])
	if err != nil {
		t.Fatalf("the snapshot does not load: %v", err)
	}
	if snap.Settings.TurnTimeout == "" || snap.Settings.Concurrency != 0 && snap.Flow != "f" {
		t.Errorf("the snapshot lost its settings: %+v", snap.Settings)
	}
	if got := answers(t, runs[0])["print"]; got != "status passed output" {
		t.Errorf("the journal says print answered %q", got)
	}
	b, _ := os.ReadFile(filepath.Join(runs[0], "snapshot.json"))
	if !bytes.Contains(b, []byte(`"default_timeout":`)) || !bytes.Contains(b, []byte(`"concurrency":`)) {
		t.Errorf("the snapshot's keys were redacted:\n%s", b)
	}
	show, _ := flow1("show")
	for _, want := range []string{"print", "shell", "succeeded"} {
		if !strings.Contains(show, want) {
			t.Errorf("flow show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "[redacted]") {
		t.Errorf("flow show redacted flow's own words:\n%s", show)
	}
	for _, f := range []string{"journal.jsonl", "events.jsonl", "output.json", "usage.json"} {
		if b, _ := os.ReadFile(filepath.Join(runs[0], f)); bytes.Contains(b, []byte("[redacted]")) {
			t.Errorf("%s redacted flow's own words:\n%s", f, b)
		}
	}
}

// TestHostileKeyInBaseURLQuery: a key percent-encoded in an agent's
// base_url query, and echoed in a JSON error with a quote and a
// backslash, is redacted in snapshot.json and everywhere else. On main
// the percent-encoded key landed in snapshot.json.
func TestHostileKeyInBaseURLQuery(t *testing.T) {
	t.Parallel()
	const key = `sk-q/u+e=r&y "a\b" 0123456789`
	s := modelserver.Start(t)
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Status: 401, Message: "invalid key " + keyOf(r) + " for " + r.Path}
	})
	dir := t.TempDir()
	base := s.URL() + "/v1?api-key=" + url.QueryEscape(key) + "&x=1"
	flow := fmt.Sprintf(`name: f
agents:
  - {name: asker, description: asks, driver: openai, model: test-model, base_url: %q, api_key_env: MY_LLM_ACCESS}
nodes:
  - {id: ask, agent: asker, prompt: x, on_fail: continue}
`, base)
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flowBinary(t), "run", "f.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MY_LLM_ACCESS="+key, cleanHome(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	snap, err := os.ReadFile(filepath.Join(runs[0], "snapshot.json"))
	if err != nil || !bytes.Contains(snap, []byte(`"base_url":`)) {
		t.Fatalf("the snapshot, without the agent's base_url: %v\n%s", err, snap)
	}
	for _, form := range []string{key, url.QueryEscape(key), `sk-q/u+e=r\u0026y \"a\\b\" 0123456789`,
		`sk-q/u+e=r&y \"a\\b\" 0123456789`, `sk-q/u+e=r\\u0026y \\\"a\\\\b\\\" 0123456789`, `sk-q/u+e=r&y \\\"a\\\\b\\\" 0123456789`,
		html.EscapeString(key), template.HTMLEscapeString(key)} {
		clitest.NoJoinedKey(t, runs[0], form)
		if bytes.Contains(out, []byte(form)) {
			t.Errorf("flow run's output holds %q:\n%s", form, out)
		}
	}
}

// TestHostileHugeStderrIsBounded: an agent writing 200 MB to stderr costs
// flow at most 64 MiB more memory than one writing a line, as a run:
// step does; the turn keeps stderr's end, and the live log its start. On
// main the whole stderr was held in memory (about 1 GB of RSS).
func TestHostileHugeStderrIsBounded(t *testing.T) {
	const size = 200_000_000
	flow := `name: f
agents:
  - {name: writer, description: writes, driver: exec, command: [sh, -c, 'cat >/dev/null; head -c $0 /dev/zero | tr "\0" e >&2; echo "the last line" >&2; echo done', "%d"]}
nodes:
  - {id: write, agent: writer, prompt: x}
`
	bin := flowBinary(t)
	run := func(n int) (dir string, maxRSS int64) {
		dir = t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(fmt.Sprintf(flow, n)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "f.yaml")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("flow run: %v\n%s", err, stderr.String())
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			t.Skip("no rusage here")
		}
		t.Logf("%d bytes of stderr: peak RSS %d MiB in %v", n, ru.Maxrss>>10, time.Since(start))
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		return runs[0], ru.Maxrss << 10 // Maxrss is in KiB
	}
	_, small := run(10)
	dir, big := run(size)
	if big-small > 64<<20 {
		t.Errorf("a %d-byte stderr took %d MiB more memory than a short one, want at most 64", size, (big-small)>>20)
	}
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			st, _ := d.Info()
			total += st.Size()
		}
		return nil
	})
	if total > 16<<20 {
		t.Errorf("the run directory holds %d bytes for a %d-byte stderr, want it bounded", total, size)
	}
	jsonl, _ := filepath.Glob(filepath.Join(dir, "home", "write", "*.jsonl"))
	facts := journal(t, dir)
	ok := false
	for _, f := range facts {
		ok = ok || f.Visit == "write" && f.Type == "end" && f.OK != nil && *f.OK
	}
	if !ok || len(jsonl) == 0 {
		t.Errorf("the visit did not end well (%d transcripts)", len(jsonl))
	}
}
