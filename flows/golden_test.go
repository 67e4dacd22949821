package flows

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/schema"
)

// TestGolden loads each flows/testdata/*.txtar archive and compares every
// diagnostic, rendered as `flow validate` prints it, with the archive's
// `errors` file. The archive holds the flow named by its own stem (x.txtar
// holds x.yaml), any flows it calls, and agent files under agents/.
//
// UPDATE_GOLDEN=1 go test ./flows -run Golden rewrites the errors files.
func TestGolden(t *testing.T) {
	archives, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) == 0 {
		t.Fatal("no golden archives in testdata")
	}
	update := os.Getenv("UPDATE_GOLDEN") != ""
	for _, path := range archives {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			want, hasWant := writeArchive(t, ar, dir)
			if !hasWant && !update {
				t.Fatalf("%s has no errors file", path)
			}
			_, diags := Load(filepath.Join(dir, name+".yaml"), Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: testDrivers})
			got := strings.ReplaceAll(diags.Error(), dir+string(filepath.Separator), "")
			if got != "" {
				got += "\n"
			}
			if update {
				setErrors(ar, got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("diagnostics differ (UPDATE_GOLDEN=1 rewrites them)\n--- got:\n%s--- want:\n%s", got, want)
			}
			if got == "" {
				t.Errorf("%s loads without diagnostics; a golden archive is for faults", path)
			}
		})
	}
}

// writeArchive writes every file of ar except `errors` under dir and
// returns the content of `errors`.
func writeArchive(t *testing.T, ar *txtar.Archive, dir string) (errs string, ok bool) {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == "errors" {
			errs, ok = string(f.Data), true
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return errs, ok
}

func setErrors(ar *txtar.Archive, text string) {
	for i := range ar.Files {
		if ar.Files[i].Name == "errors" {
			ar.Files[i].Data = []byte(text)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: "errors", Data: []byte(text)})
}

// goldenFlows returns the flow files held by the golden archives, for
// seeding the fuzzer.
func goldenFlows(tb testing.TB) [][]byte {
	tb.Helper()
	archives, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	hostile, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.txtar"))
	archives = append(archives, hostile...)
	var out [][]byte
	for _, path := range archives {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range ar.Files {
			if strings.HasSuffix(f.Name, ".yaml") {
				out = append(out, bytes.Clone(f.Data))
			}
		}
	}
	return out
}

// TestValidateReportsEveryFault is the acceptance test for collecting
// problems: one file with six unrelated faults gives six errors, one at
// each fault's line, not the first fault only.
func TestValidateReportsEveryFault(t *testing.T) {
	src := `name: faults
descripton: six faults, one per marked line
agents:
  - {name: worker, description: does work, driver: exec, command: [w]}
nodes:
  - id: build
    run: [make]
    timeout: soon
  - id: build
    run: [make, again]
  - id: each
    map: '[1, 2, 3]'
    do: [{id: lint, run: [lint]}]
  - id: look
    agent: scuot
    prompt: Look.
  - id: gate
    choice:
      - when: build.output.passed == "yes"
        do: [{id: ship, run: [ship]}]
`
	wantLines := []int{2, 8, 9, 12, 15, 19}
	dir := t.TempDir()
	_, diags := LoadSource(filepath.Join(dir, "faults.yaml"), []byte(src), Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir})
	if len(diags) != len(wantLines) {
		t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(wantLines), diags.Error())
	}
	for i, d := range diags.Sorted() {
		if d.Severity != schema.Error {
			t.Errorf("%s: severity %s, want error", d, d.Severity)
		}
		if d.Pos.Line != wantLines[i] {
			t.Errorf("diagnostic %d at line %d, want line %d: %s", i, d.Pos.Line, wantLines[i], d)
		}
	}
}
