package clitest

import (
	"encoding/json"
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
	"github.com/flowrun/flow/internal/proc"
)

// Missing ends a test that needs a program this machine lacks: an agent
// CLI, Chromium. A developer without it still runs every other test, so the
// test is skipped; with CI=true it fails instead, so that CI never passes
// without having run it. Taskfile.yml's deps task follows the same rule.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: a test may not skip for want of it)", args...)
	}
	t.Skipf(format, args...)
}

// Binary returns the agent CLI name: from PATH (`go -C tools tool task test` puts the
// pinned ones there), else from the repository's .tools/node, where
// `go -C tools tool task deps` installs them. Without it the test is Missing.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, ".tools", "node", "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(t, "%s is not installed: not on PATH nor in .tools/node/node_modules/.bin (run `go -C tools tool task deps`)", name)
	return ""
}

// Tool returns a program that `go -C tools tool task deps` installs into the
// repository's .tools/bin (the Temporal CLI): from PATH, else from there.
// Without it the test is Missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(t, "%s is not installed: not on PATH nor in .tools/bin (run `go -C tools tool task deps`)", name)
	return ""
}

// moduleRoot finds the directory of go.mod above the test's package.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", os.ErrNotExist
		}
		dir = up
	}
}

// Turn returns a turn of agent on the model "test-model" for prompt, with
// a fresh home and working directory and a run id of its own, so that
// NoneLeft looks at this test's processes only.
func Turn(t testing.TB, agent *flows.Agent, prompt string) *engine.Turn {
	t.Helper()
	return &engine.Turn{
		RunID:    fmt.Sprintf("%stest-%d-%s", agent.Driver, os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")),
		Visit:    "review#1/" + agent.Name,
		Agent:    agent,
		Model:    "test-model",
		Prompt:   prompt,
		Home:     t.TempDir(),
		WorkDir:  t.TempDir(),
		Timeout:  time.Minute,
		Progress: func(engine.Progress) {},
	}
}

// NoKey fails the test if key is in any regular file under dir.
func NoKey(t testing.TB, dir, key string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) {
			t.Errorf("the API key is written in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Errorf("looking for the API key: %v", err)
	}
}

// NoneLeft fails the test if a process of the run runID is still alive,
// and ends it.
func NoneLeft(t testing.TB, runID string) {
	t.Helper()
	if n, err := proc.KillTagged(runID, time.Second); err != nil || n != 0 {
		t.Errorf("%d processes outlived the turn (%v)", n, err)
	}
}

// Progress records a turn's progress. Its zero value is ready to use; it
// must not be copied after first use.
type Progress struct {
	mu   sync.Mutex
	list []engine.Progress
}

// Record is a Turn.Progress.
func (p *Progress) Record(pr engine.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, pr)
}

// Has reports whether activity was reported.
func (p *Progress) Has(activity string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range p.list {
		if pr.Activity == activity {
			return true
		}
	}
	return false
}

// String lists what was reported, for a failure message.
func (p *Progress) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%+v", p.list)
}

// Fixture returns the file name under the package's testdata.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Record keeps the raw stream of the last turn in res's transcript as
// testdata/name, a fixture for the unit tests, when FLOW_RECORD=1. The
// transcript's own lines (package transcript: the turn's header and
// summary) are left out.
func Record(t testing.TB, res *engine.TurnResult, name string) {
	t.Helper()
	if os.Getenv("FLOW_RECORD") == "" || res == nil || res.Transcript == "" {
		return
	}
	b, err := os.ReadFile(res.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, `{"flow_turn_start":`):
			keep = nil
		case line != "" && !strings.HasPrefix(line, `{"flow_turn":`):
			keep = append(keep, line)
		}
	}
	if err := os.WriteFile(filepath.Join("testdata", name), []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// MostTokens is the largest token count reported: the most a budget watch
// saw while the turn ran.
func (p *Progress) MostTokens() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, pr := range p.list {
		n = max(n, pr.Tokens)
	}
	return n
}

// Billed fails the test unless res records, whole, the tokens the model
// server billed, and its live count never went above them.
func Billed(t testing.TB, res *engine.TurnResult, billed int64, progress *Progress) {
	t.Helper()
	u := res.Usage
	t.Logf("billed %d, recorded %d (input %v, output %v, cache_read %v, cache_write %v), most live %d",
		billed, u.Tokens(), show(u.Input), show(u.Output), show(u.CacheRead), show(u.CacheWrite), progress.MostTokens())
	if u.Tokens() != billed || u.Partial {
		t.Errorf("recorded %d tokens (partial %v), the server billed %d", u.Tokens(), u.Partial, billed)
	}
	if live := progress.MostTokens(); live > billed {
		t.Errorf("the live count reached %d tokens, more than the %d billed", live, billed)
	}
}

func show(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// NoJoinedKey fails the test if key is in any regular file under dir, or
// if the texts of one field of a JSONL file (the string values at one
// path, as choices.0.delta.content), joined in the order of the lines,
// hold key or six bytes of it in a row: a key a model streamed in many
// chunks must not be kept chunk by chunk. It returns how many files it
// read.
func NoJoinedKey(t testing.TB, dir, key string) int {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), key) {
			t.Errorf("the key is written in %s", path)
			return nil
		}
		joined := map[string]*strings.Builder{}
		for _, line := range strings.Split(string(b), "\n") {
			var v any
			if json.Unmarshal([]byte(line), &v) == nil {
				joinStrings(joined, "", v)
			}
		}
		for p, text := range joined {
			for i := 0; i+6 <= len(key); i++ {
				if strings.Contains(text.String(), key[i:i+6]) {
					t.Errorf("%s: the texts at %s, joined, hold %q of the key: %.300q", path, p, key[i:i+6], text.String())
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("looking for the key: %v", err)
	}
	return files
}

func joinStrings(joined map[string]*strings.Builder, path string, v any) {
	switch v := v.(type) {
	case string:
		if joined[path] == nil {
			joined[path] = &strings.Builder{}
		}
		joined[path].WriteString(v)
	case map[string]any:
		for k, e := range v {
			joinStrings(joined, path+"."+k, e)
		}
	case []any:
		for i, e := range v {
			joinStrings(joined, fmt.Sprintf("%s.%d", path, i), e)
		}
	}
}
