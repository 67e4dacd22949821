package native

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRanges(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\ntwo\nthree\nfour\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &toolbox{dir: dir, tools: []string{ToolRead}}
	got, isErr := b.run(context.Background(), ToolRead, `{"path": "f.txt", "offset": 2, "limit": 2}`)
	want := "     2\ttwo\n     3\tthree\n[… 1 lines more; read on with offset 4]\n"
	if isErr || got != want {
		t.Errorf("read 2–3: %q (error %v), want %q", got, isErr, want)
	}
	if got, isErr := b.run(context.Background(), ToolRead, `{"path": "f.txt", "offset": 9}`); !isErr || !strings.Contains(got, "past its end") {
		t.Errorf("read past the end: %q", got)
	}
	if got, isErr := b.run(context.Background(), ToolEdit, `{"path": "f.txt", "old": "one", "new": "1"}`); !isErr || !strings.Contains(got, "no tool") {
		t.Errorf("a tool the agent does not list: %q", got)
	}
}

func TestEditUniqueMatch(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("a b a c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	b := &toolbox{dir: dir, tools: []string{ToolEdit}}
	edit := func(args string) (string, bool) { return b.run(context.Background(), ToolEdit, args) }
	if got, isErr := edit(`{"path": "f.txt", "old": "a", "new": "x"}`); !isErr || !strings.Contains(got, "occurs 2 times") {
		t.Errorf("an ambiguous edit: %q", got)
	}
	if got, isErr := edit(`{"path": "f.txt", "old": "zzz", "new": "x"}`); !isErr || !strings.Contains(got, "does not occur") {
		t.Errorf("an edit of text not there: %q", got)
	}
	if got, isErr := edit(`{"path": "f.txt", "old": "b", "new": "B"}`); isErr {
		t.Errorf("a unique edit: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "a B a c\n" {
		t.Errorf("after the edit: %q", b)
	}
	if got, isErr := edit(`{"path": "new/g.txt", "old": "", "new": "hello"}`); isErr {
		t.Errorf("creating a file: %q", got)
	}
	for _, p := range []string{"../escape.txt", filepath.Join(outside, "abs.txt"), "out/link.txt", ".git/config"} {
		if got, isErr := edit(`{"path": "` + p + `", "old": "", "new": "x"}`); !isErr {
			t.Errorf("an edit of %s succeeded: %q", p, got)
		}
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("written outside: %v", left)
	}
}

func TestTruncateHeadAndTail(t *testing.T) {
	s := strings.Repeat("h", 100) + strings.Repeat("m", 1000) + strings.Repeat("t", 100)
	got := Truncate(s, 200)
	if !strings.HasPrefix(got, strings.Repeat("h", 100)) || !strings.HasSuffix(got, strings.Repeat("t", 100)) || !strings.Contains(got, "1000 bytes left out") {
		t.Errorf("truncated: %q", got)
	}
	w := &boundedWriter{buf: new(bytes.Buffer), limit: 10}
	for _, part := range []string{"01234", "56789", "abcdefghij", "KLMNO"} {
		if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if got := w.text(); got != "01234\n[… 15 bytes left out …]\nKLMNO" {
		t.Errorf("bounded output: %q", got)
	}
}
