package flows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestEveryCodeHasAGolden keeps three lists in step: the codes declared in
// schema/codes.go, the codes the loader's sources (schema/ and flows/) make
// diagnostics with, and the codes the golden archives show. A code made but
// not declared, declared but never made, or made but in no golden fails, so
// a new diagnostic arrives with a test of how it reads.
//
// The sources are read with go/ast rather than by running the loader: a code
// must be visible where it is made — a Code constant or a string literal, at
// a call of Add, Warn or errorf or in a Code: field — for this test to count
// it, and anything else fails.
func TestEveryCodeHasAGolden(t *testing.T) {
	declared := declaredCodes(t)
	if len(declared) == 0 {
		t.Fatal("no Code constants in ../schema/codes.go")
	}
	made := madeCodes(t, declared, "../schema", ".")
	shown := goldenCodes(t)
	isDeclared := map[string]bool{}
	for _, code := range declared {
		isDeclared[code] = true
	}

	for _, code := range slices.Sorted(maps.Keys(made)) {
		switch at := made[code]; {
		case !isDeclared[code]:
			t.Errorf("%s: code %q is not declared in schema/codes.go", at, code)
		case !shown[code]:
			t.Errorf("%s: code %q appears in no golden errors file: add flows/testdata/<case>.txtar (UPDATE_GOLDEN=1 writes its errors)", at, code)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(declared)) {
		if _, ok := made[declared[name]]; !ok {
			t.Errorf("schema.%s (%q) is declared, but no diagnostic is made with it", name, declared[name])
		}
	}
	for _, code := range slices.Sorted(maps.Keys(shown)) {
		if !isDeclared[code] {
			t.Errorf("a golden shows code %q, which schema/codes.go does not declare", code)
		}
	}
}

// declaredCodes returns the constants of type Code in schema/codes.go, by
// name.
func declaredCodes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "schema", "codes.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				out[name.Name] = stringLit(t, vs.Values[i])
			}
		}
	}
	return out
}

// madeCodes returns every code that the non-test sources of dirs make a
// diagnostic with, each with the first place it is made.
func madeCodes(t *testing.T, declared map[string]string, dirs ...string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	made := map[string]string{}
	note := func(e ast.Expr) {
		at := fset.Position(e.Pos()).String()
		var code string
		switch e := e.(type) {
		case *ast.BasicLit:
			code = stringLit(t, e)
		case *ast.Ident: // a constant in package schema, or a forwarded parameter
			if e.Name == "code" {
				return
			}
			code = constant(t, declared, e.Name, at)
		case *ast.SelectorExpr: // schema.CodeX
			code = constant(t, declared, e.Sel.Name, at)
		default:
			t.Errorf("%s: the code is neither a constant nor a literal: this test cannot tell which it is", at)
			return
		}
		if _, ok := made[code]; !ok && code != "" {
			made[code] = at
		}
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					// Add, Warn and errorf take (pos, code, detail, format, args...).
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) >= 4 &&
						slices.Contains([]string{"Add", "Warn", "errorf"}, sel.Sel.Name) {
						note(n.Args[1])
					}
				case *ast.KeyValueExpr:
					if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Code" {
						note(n.Value)
					}
				}
				return true
			})
		}
	}
	return made
}

func constant(t *testing.T, declared map[string]string, name, at string) string {
	t.Helper()
	code, ok := declared[name]
	if !ok {
		t.Errorf("%s: %s is not a Code constant of schema/codes.go", at, name)
	}
	return code
}

func stringLit(t *testing.T, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Fatalf("want a string literal, got %T", e)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// goldenLine matches the head line of a rendered diagnostic and captures its
// code: `file[:line:col]: [warning: ]code: summary`.
var goldenLine = regexp.MustCompile(`^[^\s:]+(?::\d+:\d+)?: (?:warning: )?([a-z-]+): `)

// goldenCodes returns the codes that the golden archives' errors files show.
func goldenCodes(t *testing.T) map[string]bool {
	t.Helper()
	archives, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	archives = append(archives, hostile...)
	shown := map[string]bool{}
	for _, path := range archives {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name != "errors" {
				continue
			}
			for _, line := range strings.Split(string(f.Data), "\n") {
				if m := goldenLine.FindStringSubmatch(line); m != nil {
					shown[m[1]] = true
				}
			}
		}
	}
	return shown
}
