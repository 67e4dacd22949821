package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository root, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goFiles lists the non-test Go files under dir.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != dir {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The engine stays a package a newcomer can read: at most 3,000 lines of
// package engine itself (engine/local, engine/enginetest and the walker's
// parts — engine/ledger, engine/delegation, engine/worktrees,
// engine/replay, engine/shown — are packages of their own), and no assembly, unsafe or
// memory mapping anywhere in the module (STYLE.md, "Performance work").
// The bound was 4,000 until the walker was split by feature
// (docs/decisions.md, "The walker split by feature"); no function in it is
// over 60 lines either (TestEngineFunctionsAreShort).
func TestEngineStaysPlain(t *testing.T) {
	root := moduleRoot(t)
	lines := 0
	for _, f := range goFiles(t, filepath.Join(root, "engine")) {
		if filepath.Dir(f) != filepath.Join(root, "engine") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	}
	if lines > 3000 {
		t.Errorf("package engine holds %d lines of non-test Go, more than 3,000: put a new feature behind its own small type, in a package of its own under engine", lines)
	}
	for _, f := range goFiles(t, root) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, banned := range []string{`"unsafe"`, "syscall.Mmap", "unix.Mmap", "MADV_", "SYS_MADVISE"} {
			if strings.Contains(string(b), banned) {
				t.Errorf("%s uses %s", f, banned)
			}
		}
	}
	asm, _ := filepath.Glob(filepath.Join(root, "*", "*.s"))
	deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.s"))
	if all := slices.Concat(asm, deeper); len(all) > 0 {
		t.Errorf("assembly in the module: %v", all)
	}
}

// cmd/flow knows no run-directory file and no fact or event type by its
// spelling: the rundir package owns those, and cmd goes through it.
func TestCommandLineKnowsNoRunDirectoryLayout(t *testing.T) {
	banned := []string{
		"journal.jsonl", "events.jsonl", "snapshot.json", "lock.json", "output.json", "usage.json", "report.html", "home",
		"run.start", "run.end", "visit.start", "visit.end", "visit.replayed", "progress", "note", "start", "end",
	}
	fset := token.NewFileSet()
	for _, f := range goFiles(t, filepath.Join(moduleRoot(t), "cmd", "flow")) {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, b := range banned {
				if s == b || strings.Contains(s, b) && strings.ContainsAny(b, "./") || strings.Contains(s, "home/") {
					t.Errorf("%s: the string %q names the run directory's layout or vocabulary (%s): go through rundir", fset.Position(lit.Pos()), s, b)
				}
			}
			return true
		})
	}
}
