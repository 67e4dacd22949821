package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Runs start, resume and stop through package runner and nothing else
// (docs/architecture.md, "One run lifecycle"): sweep and serve import
// runner and neither a backend (temporal, engine/local) nor the engine's
// run entries; cmd/flow uses package temporal only to run a worker.
func TestRunsGoThroughTheRunner(t *testing.T) {
	root := moduleRoot(t)
	// The engine's entries that start, resume or take up a run: a caller
	// above the runner that names one has a lifecycle of its own.
	entries := []string{"Execute", "Resume", "Begin", "Walk"}
	for _, dir := range []string{"sweep", "serve", "cmd/flow"} {
		imports, uses := importsAndUses(t, filepath.Join(root, dir))
		if dir != "cmd/flow" && !imports[module+"/runner"] {
			t.Errorf("%s does not import runner: it starts runs some other way", dir)
		}
		for _, banned := range []string{module + "/temporal", module + "/engine/local"} {
			if imports[banned] && dir != "cmd/flow" {
				t.Errorf("%s imports %s: it starts runs through runner, which picks the backend", dir, banned)
			}
		}
		for _, u := range uses[module+"/engine"] {
			if slices.Contains(entries, u.name) {
				t.Errorf("%s: %s calls engine.%s: start, resume and stop runs through runner", dir, u.pos, u.name)
			}
		}
		for _, u := range uses[module+"/temporal"] {
			if !slices.Contains([]string{"Activities", "NewWorker"}, u.name) {
				t.Errorf("%s: %s uses temporal.%s: cmd/flow uses temporal only to run a worker; runs go through runner", dir, u.pos, u.name)
			}
		}
	}
}

// use is one reference to an exported name of an imported package.
type use struct {
	name string
	pos  token.Position
}

// importsAndUses reads the non-test files of dir (not below): the packages
// they import and, by import path, the names they use of each.
func importsAndUses(t *testing.T, dir string) (map[string]bool, map[string][]use) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	imports, uses := map[string]bool{}, map[string][]use{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := map[string]string{} // the name a file gives an import -> its path
		for _, im := range file.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			imports[path] = true
			name := filepath.Base(path)
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = path
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
				if path, ok := local[id.Name]; ok {
					uses[path] = append(uses[path], use{name: sel.Sel.Name, pos: fset.Position(sel.Pos())})
				}
			}
			return true
		})
	}
	return imports, uses
}

// The run directory stores what a run recorded without knowing what a plan
// is: rundir imports no flows (plans are compiled again by flows.Reload,
// for its callers).
func TestRunDirectoryKnowsNoPlans(t *testing.T) {
	imports, _ := importsAndUses(t, filepath.Join(moduleRoot(t), "rundir"))
	if imports[module+"/flows"] {
		t.Error("rundir imports flows: the caller compiles a snapshot's plan again (flows.Reload)")
	}
}
