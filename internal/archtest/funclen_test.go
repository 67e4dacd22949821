package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of package engine may span,
// its signature and closing brace included.
const maxFuncLines = 60

// No function of package engine's own folder is over 60 lines: the walker
// is made of small parts, each of one job (docs/decisions.md, "The walker
// split by feature").
func TestEngineFunctionsAreShort(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, path := range goFiles(t, filepath.Join(root, "engine")) {
		if filepath.Dir(path) != filepath.Join(root, "engine") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, long := range longFuncs(fset, f, maxFuncLines) {
			t.Errorf("engine/%s: %s; split it into parts of one job each", filepath.Base(path), long)
		}
	}
}

// longFuncs names the functions of f that span more than max lines.
func longFuncs(fset *token.FileSet, f *ast.File, max int) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		if n > max {
			out = append(out, fmt.Sprintf("%s is %d lines, more than %d", fd.Name.Name, n, max))
		}
	}
	return out
}

// TestLongFuncsRule checks the rule on small sources: a function of 60
// lines passes, one of 61 does not.
func TestLongFuncsRule(t *testing.T) {
	for _, c := range []struct {
		body int
		long bool
	}{{58, false}, {59, true}} {
		src := "package engine\n\nfunc f() {\n" + strings.Repeat("\t_ = 1\n", c.body) + "}\n"
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "f.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := longFuncs(fset, f, maxFuncLines); (len(got) > 0) != c.long {
			t.Errorf("a function of %d lines: got %q", c.body+2, got)
		}
	}
}
