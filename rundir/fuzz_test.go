package rundir

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadJournal: whatever a journal holds, reading and inspecting it
// returns facts or an error, never a panic.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte(`{"type":"run","status":"running","time":"2026-11-30T00:00:00Z"}` + "\n" + `{"type":"end","visit":"a","ok":true}` + "\n"))
	f.Add([]byte(`{"type":"end","vis`))
	f.Add([]byte("\x00\x00\n{}\n"))
	f.Add([]byte(`{"type":"end","scope":"a\u0000b","error":{"kind":"child","cause":{"kind":"x"}}}` + "\n"))
	f.Fuzz(func(t *testing.T, journal []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, journalFile), journal, 0o644); err != nil {
			t.Fatal(err)
		}
		facts, _ := ReadJournal(dir)
		_ = Visits(facts)
		_ = Tally(facts)
		if info, err := Inspect(dir); err == nil {
			_ = writeReport(dir, info, info.Facts, nil)
		}
	})
}
