package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileRedactHomeJoinsLines: a CLI's own session log that keeps a
// streamed answer delta by delta is redacted as a stream when the visit
// ends: joining its deltas no longer gives the key back, and a log
// without a secret is left as it was.
func TestHostileRedactHomeJoinsLines(t *testing.T) {
	w, err := Create(t.TempDir(), "r", testKey)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := time.Now()
	dir := filepath.Join(w.Home("a"), "cli-config")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for _, c := range "the key: " + testKey + " end" {
		b, _ := json.Marshal(map[string]any{"type": "delta", "text": string(c)})
		log.Write(append(b, '\n'))
	}
	session, clean := filepath.Join(dir, "deltas.jsonl"), filepath.Join(dir, "clean.jsonl")
	cleanLog := `{"type":"delta","text":"sk-"}` + "\n" + `{"type":"delta", "text":"ello"}` + "\n"
	for p, body := range map[string]string{session: log.String(), clean: cleanLog} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.RedactHome("a", start); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(session)
	var joined strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var d struct{ Text string }
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("a line is no longer JSON: %q", line)
		}
		joined.WriteString(d.Text)
	}
	if got := joined.String(); strings.Contains(got, testKey[3:]) || !strings.HasPrefix(got, "the key: ") || !strings.HasSuffix(got, "[redacted] end") {
		t.Errorf("the joined deltas are %q", got)
	}
	if b, _ := os.ReadFile(clean); string(b) != cleanLog {
		t.Errorf("a log without a secret changed: %q", b)
	}
}
