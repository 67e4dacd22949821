package reuse

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// TestAnswerFromRecording: a typed answer comes back as JSON (a string
// too), and an answer file a moved recording names is found under the
// recording's own directory and copied into the new visit's home.
func TestAnswerFromRecording(t *testing.T) {
	ok := true
	rec := &Recording{Name: "r1", Dir: t.TempDir()}
	typed := hit{rec, &record.Fact{Visit: "v", OK: &ok, Output: "plain"}}
	res, err := answer(typed, &engine.Turn{OutputSchema: []byte(`{"type":"string"}`), Home: t.TempDir()})
	if err != nil || res.Output != `"plain"` || res.Reused.Run != "r1" || res.Usage.Tokens() != 0 {
		t.Errorf("typed: %+v %v", res, err)
	}
	// The file was written at /elsewhere/runs/r1/home/v/answer.md; the
	// recording now lives in rec.Dir.
	moved := filepath.Join(rec.Dir, "home", "v", "answer.md")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(moved, []byte("the whole answer"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := hit{rec, &record.Fact{Visit: "v", OK: &ok, Output: "the wh", File: "/elsewhere/runs/r1/home/v/answer.md", Size: 16}}
	home := t.TempDir()
	res, err = answer(long, &engine.Turn{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(res.File); string(b) != "the whole answer" || filepath.Dir(res.File) != home {
		t.Errorf("the answer file: %s holds %q", res.File, b)
	}
}

// TestRecordingFilesStayInside: a recording is data a repository may
// carry; an answer file it names outside its directory (an absolute path,
// a climb with "..", a link out) is never read.
func TestRecordingFilesStayInside(t *testing.T) {
	ok := true
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("not yours"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &Recording{Name: "c", Dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(rec.Dir, "answers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(rec.Dir, "answers", "link.md")); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{outside, "../" + filepath.Base(filepath.Dir(outside)) + "/secret.txt", "answers/link.md"} {
		h := hit{rec, &record.Fact{Visit: "v", OK: &ok, Output: "x", File: file, Size: 9}}
		home := t.TempDir()
		if res, err := answer(h, &engine.Turn{Home: home}); err == nil {
			b, _ := os.ReadFile(res.File)
			t.Errorf("%s: read %q from outside the recording", file, b)
		}
	}
}
