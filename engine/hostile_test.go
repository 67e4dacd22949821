package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// The hostile-input cases of the engine (issue 15).

// A run id that is taken is refused: a run never writes into another's
// directory.
func TestHostileRunIDCollision(t *testing.T) {
	p := load(t, "one", "name: one\n"+agents+"nodes:\n  - {id: a, agent: worker, prompt: x}\n")
	runs := t.TempDir()
	cfg := local.Config{Drivers: map[string]Driver{"exec": &fakeDriver{}}, Commands: fakeCommands{}, RunsDir: runs}
	opts := Options{RunID: "taken"}
	if _, err := local.Execute(context.Background(), p, cfg, opts); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(runs, "taken", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.Execute(context.Background(), p, cfg, opts); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a second run with the same id: %v, want refused", err)
	}
	after, _ := os.ReadFile(filepath.Join(runs, "taken", "journal.jsonl"))
	if string(before) != string(after) {
		t.Error("the second run wrote into the first one's journal")
	}
}

// A long answer is held and journaled as a bounded, UTF-8-safe prefix with
// its file and size, in the journal, output.json and report.html alike.
func TestHostileLongAnswerIsBoundedInTheJournal(t *testing.T) {
	p := load(t, "big", "name: big\n"+agents+"nodes:\n  - {id: long, agent: worker, prompt: x}\n")
	big := "a" + strings.Repeat("é", AnswerLimit) // 100 KiB, cut inside a rune at AnswerLimit
	res, facts := execute(t, p, &fakeDriver{answer: func(*Turn) (string, error) { return big, nil }}, Options{})
	if !res.OK {
		t.Fatal(res.Failure)
	}
	out, _ := res.Output.(string)
	if len(out) > AnswerLimit || !utf8.ValidString(out) || !strings.HasPrefix(big, out) {
		t.Errorf("the run's output is %d bytes (valid UTF-8: %v), want a prefix of at most %d", len(out), utf8.ValidString(out), AnswerLimit)
	}
	end := facts[len(facts)-2]
	if s, _ := end.Output.(string); len(s) > AnswerLimit || end.File == "" || end.Size != int64(len(big)) {
		t.Errorf("end fact: %d bytes, file %q, size %d", len(s), end.File, end.Size)
	}
	for _, name := range []string{"journal.jsonl", "output.json", "report.html", "events.jsonl"} {
		if st, err := os.Stat(filepath.Join(res.Dir, name)); err != nil || st.Size() > 2*AnswerLimit+32<<10 {
			t.Errorf("%s: %v, %v bytes", name, err, st.Size())
		}
	}
}

// A typed answer longer than TypedLimit fails `schema` instead of being
// parsed into memory.
func TestHostileHugeTypedAnswerIsRefused(t *testing.T) {
	p := load(t, "typed", "name: typed\n"+agents+"nodes:\n  - {id: v, agent: worker, prompt: x, output: {items: [string]}}\n")
	onHosts(t, func(t *testing.T, h host) {
		huge := `{"items":["` + strings.Repeat("x", TypedLimit) + `"]}`
		res, _ := executeOn(t, h, p, &fakeDriver{answer: func(*Turn) (string, error) { return huge, nil }}, Options{})
		if res.OK || res.Failure.Root().Kind != schema.FailSchema || !strings.Contains(res.Failure.Root().Message, "a typed output may have") {
			t.Fatalf("run = %+v, want failed schema for the size", res.Failure)
		}
		// A typed answer over AnswerLimit but under TypedLimit parses whole.
		long := `{"items":["` + strings.Repeat("y", 2*AnswerLimit) + `"]}`
		res, _ = executeOn(t, h, p, &fakeDriver{answer: func(*Turn) (string, error) { return long, nil }}, Options{})
		if !res.OK {
			t.Fatalf("a %d-byte typed answer failed: %v", len(long), res.Failure)
		}
		if items := res.Output.(map[string]any)["items"].([]any); len(items[0].(string)) != 2*AnswerLimit {
			t.Error("the typed answer was not parsed whole")
		}
	})
}

// A key an agent echoes reaches neither the journal, nor the events the
// live view gets, nor the result the command line prints.
func TestHostileSecretsReachNoCaller(t *testing.T) {
	const key = "sk-engine-hostile-123456"
	t.Setenv("FLOW_TEST_ENGINE_ACCESS", key)
	p := load(t, "leak", `name: leak
agents:
  - {name: worker, description: does work, driver: exec, command: [x], api_key_env: FLOW_TEST_ENGINE_ACCESS}
nodes:
  - {id: a, agent: worker, prompt: x, on_fail: continue}
  - {id: b, agent: worker, prompt: y}
`)
	var seen []string
	d := &fakeDriver{answer: func(t *Turn) (string, error) {
		t.Progress(Progress{Activity: "using " + key})
		if t.Visit == "a" {
			return "", &record.Failure{Message: "refused " + key}
		}
		return "the key is " + key, nil
	}}
	res, facts := execute(t, p, d, Options{OnEvent: func(e *record.Event) { seen = append(seen, e.Activity, errMsg(e.Error)) }})
	if out, _ := res.Output.(string); out != "the key is [redacted]" {
		t.Errorf("output %q", out)
	}
	for _, s := range seen {
		if strings.Contains(s, key) {
			t.Errorf("an event handed to OnEvent holds the key: %q", s)
		}
	}
	for _, f := range facts {
		if f.Error != nil && strings.Contains(f.Error.Message, key) {
			t.Errorf("a fact holds the key: %q", f.Error.Message)
		}
	}
}

func errMsg(f *record.Failure) string {
	if f == nil {
		return ""
	}
	return f.Message
}
