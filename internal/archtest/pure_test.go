package archtest

import (
	"fmt"
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

// forbidden are the imports the walker may not have: each is an effect
// (the disk, processes, locks held across a turn, working copies, the
// drivers, Temporal) that belongs to a host (docs/decisions.md, "A pure
// walker"). A path ending in "/" forbids the packages under it too.
var forbidden = []string{
	"os", "os/exec", "sync", "sync/atomic",
	module + "/rundir", module + "/internal/gitwork", module + "/internal/proc",
	module + "/steps/", "go.temporal.io/", "github.com/sourcegraph/conc",
}

// impure lists the rules each file of package engine breaks, one line per
// file and rule: "import os", "time.Now", "go statement", "make(chan)",
// "context.WithTimeout" (a timer of the process's own).
func impure(name string, f *ast.File) []string {
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		for _, bad := range forbidden {
			if p == bad || strings.HasPrefix(p, strings.TrimSuffix(bad, "/")+"/") {
				out = append(out, name+": import "+p)
			}
		}
	}
	timeName := "" // what the file calls package time, if it imports it
	for _, im := range f.Imports {
		if im.Path.Value == `"time"` {
			timeName = "time"
			if im.Name != nil {
				timeName = im.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, name+": go statement")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until" || n.Sel.Name == "NewTimer" || n.Sel.Name == "After" || n.Sel.Name == "Sleep" || n.Sel.Name == "Tick" || n.Sel.Name == "NewTicker" || n.Sel.Name == "AfterFunc") {
				out = append(out, name+": time."+n.Sel.Name)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "context" && strings.HasPrefix(sel.Sel.Name, "WithTimeout") || ok && id.Name == "context" && strings.HasPrefix(sel.Sel.Name, "WithDeadline") {
					// A real timer: a timeout is the host's Sleep.
					out = append(out, name+": context."+sel.Sel.Name)
				}
			}
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "make" && len(n.Args) > 0 {
				if _, ok := n.Args[0].(*ast.ChanType); ok {
					out = append(out, name+": make(chan)")
				}
			}
		case *ast.ChanType:
			// A channel type anywhere (a field, a parameter) is a channel
			// the walker would wait on outside its host.
			out = append(out, name+": chan type")
		}
		return true
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// impureAllowed is what package engine still does that its hosts should:
// a shrinking allowlist while the walker's effects move behind Host. A
// line here that no longer holds fails the test too, so that the list
// only shrinks. What remains: nothing; the local host is package
// engine/local. The walker's own files are clean, and so is its
// vocabulary (engine/record), which is checked too.
var impureAllowed = []string{}

// pureDirs are the packages the walker is made of, under engine: package
// engine itself and its vocabulary, engine/record.
var pureDirs = []string{"", "record", "ledger", "delegation", "worktrees", "replay", "shown"}

// TestEnginePure parses the non-test files of package engine and of its
// vocabulary and fails on any effect the walker does itself rather than
// through its Host.
func TestEnginePure(t *testing.T) {
	fset := token.NewFileSet()
	var got []string
	for _, sub := range pureDirs {
		dir := filepath.Join("..", "..", "engine", sub)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, impure(filepath.ToSlash(filepath.Join(sub, name)), f)...)
		}
	}
	for _, v := range got {
		if !slices.Contains(impureAllowed, v) {
			t.Errorf("engine/%s: the walker does this itself; make it a Host capability", v)
		}
	}
	for _, a := range impureAllowed {
		if !slices.Contains(got, a) {
			t.Errorf("engine/%s no longer holds: remove it from impureAllowed", a)
		}
	}
}

// TestImpureRules checks the rules on small sources.
func TestImpureRules(t *testing.T) {
	src := `package engine
import (
	"os"
	clock "time"
	"sync"
	"github.com/flowrun/flow/steps/pi"
	"github.com/flowrun/flow/schema"
)
func f() {
	_ = clock.Now()
	c := make(chan int)
	go func() { c <- 1 }()
	_ = make([]int, 1)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := impure("x.go", f)
	want := []string{"x.go: chan type", "x.go: go statement", "x.go: import github.com/flowrun/flow/steps/pi", "x.go: import os", "x.go: import sync", "x.go: make(chan)", "x.go: time.Now"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := fmt.Sprint(impure("y.go", mustParse(t, fset, "package engine\nimport \"time\"\nvar d = time.Second\n"))); got != "[]" {
		t.Errorf("a duration is no effect: %s", got)
	}
}

func mustParse(t *testing.T, fset *token.FileSet, src string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(fset, "y.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
