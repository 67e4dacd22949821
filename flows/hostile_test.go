package flows

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/schema"
)

// hostileDriverTools stands for the tool vocabularies a program registers
// (cmd/flow's drivers.Registry): pi takes its own names and Claude Code's for
// the tools it has, the other drivers any name.
var hostileDriverTools = map[string]map[string]string{
	"pi": {"read": "read", "bash": "bash", "edit": "edit", "write": "write", "grep": "grep", "find": "find", "ls": "ls", "glob": "find", "multiedit": "edit"},
}

// TestHostile loads each flows/testdata/hostile/*.txtar archive: inputs an
// attacker or a careless user would write, one class of hole per archive
// name (shell-…, limit-…, yaml-…, call-…, types-…, agent-…). It compares the
// rendered diagnostics with the archive's `errors` file, which is empty for
// an input that must load cleanly. An optional `limits` file sets
// schema.Limits as `key value` lines (file_bytes, depth, nodes), as the
// configuration's limits.* keys do.
//
// Every archive holds a case that failed on the main branch this suite was
// written against: a panic, a hang, a silent wrong value, a false error or a
// value run as shell code. UPDATE_GOLDEN=1 rewrites the errors files.
func TestHostile(t *testing.T) {
	archives, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.txtar"))
	if err != nil || len(archives) == 0 {
		t.Fatalf("no archives in testdata/hostile: %v", err)
	}
	update := os.Getenv("UPDATE_GOLDEN") != ""
	for _, path := range archives {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, diags := loadHostile(t, ar, name)
			got := diags.Error()
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
			if want := archiveFile(ar, "errors"); got != want {
				t.Errorf("diagnostics differ (UPDATE_GOLDEN=1 rewrites them)\n--- got:\n%s--- want:\n%s", got, want)
			}
		})
	}
}

// loadHostile writes an archive into a temporary directory and loads the
// flow named by the archive, with the archive's limits. Diagnostics name
// files relative to that directory.
func loadHostile(t *testing.T, ar *txtar.Archive, name string) (*Plan, schema.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	writeArchive(t, ar, dir)
	opts := Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: testDrivers, DriverTools: hostileDriverTools,
		Limits: archiveLimits(t, ar)}
	plan, diags := Load(filepath.Join(dir, name+".yaml"), opts)
	for i := range diags {
		diags[i].Pos.File = strings.TrimPrefix(diags[i].Pos.File, dir+string(filepath.Separator))
	}
	return plan, diags
}

func archiveFile(ar *txtar.Archive, name string) string {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	return ""
}

func archiveLimits(t *testing.T, ar *txtar.Archive) schema.Limits {
	t.Helper()
	var l schema.Limits
	for _, line := range strings.Split(archiveFile(ar, "limits"), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			t.Fatalf("limits: %q is not a number", value)
		}
		switch key {
		case "file_bytes":
			l.FileBytes = n
		case "depth":
			l.Depth = n
		case "nodes":
			l.Nodes = n
		default:
			t.Fatalf("limits: unknown key %q", key)
		}
	}
	return l
}

// hostilePlan loads one archive of the suite that must load cleanly.
func hostilePlan(t *testing.T, name string) *Plan {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", "hostile", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	plan, diags := loadHostile(t, ar, name)
	if diags.HasErrors() || plan == nil {
		t.Fatalf("%s does not load:\n%s", name, diags.Error())
	}
	return plan
}
