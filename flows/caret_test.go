package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/flowrun/flow/flows/osdisk"
)

// TestCaretUnderColumn loads every golden archive and checks, for each
// diagnostic that quotes its line, that the printed caret stands under the
// character at the diagnostic's column in the file itself, counted from 1
// in characters: a caret one off on either side fails here.
func TestCaretUnderColumn(t *testing.T) {
	archives, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	quoted := 0
	for _, path := range archives {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeArchive(t, ar, dir)
		_, diags := Load(filepath.Join(dir, name+".yaml"), Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: testDrivers})
		for _, d := range diags {
			if d.Source == "" {
				continue
			}
			src, err := os.ReadFile(d.Pos.File)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimPrefix(string(src), "\uFEFF"), "\n")
			line := []rune(strings.TrimSuffix(lines[d.Pos.Line-1], "\r"))
			want := ' ' // a column past the line's end
			if d.Pos.Col <= len(line) {
				want = line[d.Pos.Col-1]
			}
			printed := strings.Split(d.String(), "\n")
			if len(printed) < 3 {
				t.Errorf("%s: %s: no caret line", path, d)
				continue
			}
			quote, caret := printed[1], printed[2]
			bar := strings.Index(caret, "| ") + 2
			under := len([]rune(caret[bar:])) - 1 // runes before the ^
			if !strings.HasSuffix(caret, "^") || bar != strings.Index(quote, "| ")+2 {
				t.Errorf("%s: %s: caret line %q", path, d, caret)
				continue
			}
			got := ' '
			if qr := []rune(quote[bar:]); under < len(qr) {
				got = qr[under]
			}
			if got != want {
				t.Errorf("%s: %s: caret under %q, the column holds %q", path, d, got, want)
			}
			quoted++
		}
	}
	if quoted < 50 {
		t.Errorf("only %d diagnostics quoted their line", quoted)
	}
}
