package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestOneNamePerType: the walker's vocabulary (package engine/record) has
// one name, record.X. No package re-exports it under a name of its own
// (a type alias of a record type), so a reader never wonders whether
// rundir.Fact and record.Fact differ (issue 35, item 6).
func TestOneNamePerType(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, path := range goFiles(t, root) {
		if filepath.Dir(path) == filepath.Join(root, "engine", "record") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !ts.Assign.IsValid() {
				return true
			}
			if sel, ok := ts.Type.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "record" {
					t.Errorf("%s: %s is an alias of record.%s: name it record.%s where it is used", fset.Position(ts.Pos()), ts.Name.Name, sel.Sel.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}
