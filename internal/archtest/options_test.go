package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// walkerSettings are engine.Options' fields: how the walker walks a run,
// the same wherever it walks. A new walker setting is added here, with
// the reason it is one in its doc comment.
var walkerSettings = []string{
	"RunID", "Input", "Settings", "Concurrency", "Live", "Asker", "OnEvent", "Config",
	"Backoff", "Secrets", "Repeat", "Repos", "ForkedFrom", "Notes", "Killed",
}

// hostWiring are the types that say where a run happens — its leaves,
// its runtime, its record, its working copies, its delegation server — which
// the walker reaches only through its engine.Host: a field of engine.Options
// whose type names one of them is a host's, whatever its name.
var hostWiring = []string{"Driver", "Commander", "LeafRunner", "Runtime", "Host", "Recorder", "Workspace", "Delegator", "Waiter"}

// engine.Options keeps the walker's settings; the wiring of the host a run
// happens on — its drivers, command runner, run and working directories,
// leaves, runtime and delegation server — is the host's own configuration
// (local.Config in engine/local; docs/architecture.md, "Where a run's
// wiring lives"). This fails when engine.Options gains a field that is not
// a walker setting, one whose type is a host's, a directory, or a private
// flag; and when local.Config stops holding the local host's wiring.
func TestOptionsHoldNoHostWiring(t *testing.T) {
	root := moduleRoot(t)
	fields := structFields(t, filepath.Join(root, "engine"), "Options")
	if len(fields) == 0 {
		t.Fatal("package engine declares no Options struct")
	}
	for _, f := range fields {
		switch {
		case !ast.IsExported(f.name):
			t.Errorf("engine.Options.%s (%s) is private: a host reads no hidden flag of the walker's settings; say it through engine.Host", f.name, f.pos)
		case strings.HasSuffix(f.name, "Dir"):
			t.Errorf("engine.Options.%s (%s) is a directory: where a run is kept and works is its host's (local.Config, engine.Host.WorkDir)", f.name, f.pos)
		case !slices.Contains(walkerSettings, f.name):
			t.Errorf("engine.Options.%s (%s) is not a walker setting: host wiring goes in the host's config (local.Config); a new walker setting is added to walkerSettings", f.name, f.pos)
		}
		for _, name := range f.typeNames {
			if slices.Contains(hostWiring, name) {
				t.Errorf("engine.Options.%s (%s) is of a host's type (%s): the walker reaches it only through engine.Host", f.name, f.pos, name)
			}
		}
	}
	var local []string
	for _, f := range structFields(t, filepath.Join(root, "engine", "local"), "Config") {
		local = append(local, f.name)
	}
	for _, want := range []string{"Drivers", "Commands", "RunsDir", "WorkDir", "Leaves", "Runtime", "Delegates"} {
		if !slices.Contains(local, want) {
			t.Errorf("local.Config has no %s: the local host's wiring lives there", want)
		}
	}
}

// field is one field of a struct as declared: its name, where, and the
// identifiers its type names (Driver in map[string]Driver).
type field struct {
	name      string
	pos       token.Position
	typeNames []string
}

// structFields are the fields of the struct type name declared in the
// non-test files of dir (not below), embedded ones by their type's name.
func structFields(t *testing.T, dir, name string) []field {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []field
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != name {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, f := range st.Fields.List {
				var names []string
				ast.Inspect(f.Type, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.Ident:
						names = append(names, x.Name)
					case *ast.SelectorExpr:
						names = append(names, x.Sel.Name)
						return false
					}
					return true
				})
				if len(f.Names) == 0 { // embedded
					out = append(out, field{name: names[len(names)-1], pos: fset.Position(f.Pos()), typeNames: names})
				}
				for _, id := range f.Names {
					out = append(out, field{name: id.Name, pos: fset.Position(id.Pos()), typeNames: names})
				}
			}
			return false
		})
	}
	return out
}
