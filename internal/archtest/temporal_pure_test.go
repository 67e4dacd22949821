package archtest

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// workflowImpure lists what the Temporal workflow code reaches that a
// workflow may not touch except through Temporal's workflow API: the disk
// and the environment (os), programs (os/exec), the network (net…) and the
// process's clock (time.Now). The workflow code is package temporal's files
// that use the workflow API (usesWorkflowAPI); the walk follows their imports transitively,
// through the project's packages and the libraries they use, and stops at
// the standard library (which it checks as imported, not inside: fmt holds
// os) and at Temporal's SDK (the API a workflow goes through). Each line is
// "the package where the rule breaks: the rule".
//
// It follows the imports of the workflow files, not of the types they use
// from the package's other files: the workflow's input, RunInput
// (wire.go), holds a rundir.Snapshot, whose pure Sources and
// Settings.Durations the workflow calls, and rundir imports os.
func workflowImpure(t *testing.T) (breaks, workflowFiles []string) {
	t.Helper()
	pkgs := listDeps(t, module+"/temporal")
	dir := pkgs[module+"/temporal"].Dir
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !usesWorkflowAPI(f) {
			continue
		}
		name := filepath.Base(file)
		workflowFiles = append(workflowFiles, name)
		for _, rule := range fileRules(f, false) {
			out = append(out, "temporal ("+name+"): "+rule)
		}
		seen := map[string]bool{}
		queue := fileImports(f)
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if seen[p] || strings.HasPrefix(p, "go.temporal.io/") {
				continue
			}
			seen[p] = true
			pkg, ok := pkgs[p]
			if !ok || pkg.Standard {
				continue
			}
			first := strings.HasPrefix(p, module+"/")
			for _, im := range pkg.Imports {
				// A library may import os for a logger's default; what it
				// must not hold is programs or the network.
				if hostOnly(im) && (first || im != "os") {
					out = append(out, strings.TrimPrefix(p, module+"/")+": import "+im)
				}
			}
			if first {
				for _, rule := range packageClock(t, pkg) {
					out = append(out, strings.TrimPrefix(p, module+"/")+": "+rule)
				}
			}
			queue = append(queue, pkg.Imports...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), workflowFiles
}

// hostOnly says whether a standard package is an effect a workflow may not
// have itself.
func hostOnly(p string) bool {
	switch p {
	case "net/url", "net/netip": // parsing only
		return false
	}
	return p == "os" || p == "os/exec" || p == "os/signal" || p == "net" || strings.HasPrefix(p, "net/")
}

// fileImports are a file's import paths.
func fileImports(f *ast.File) []string {
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		out = append(out, p)
	}
	return out
}

// fileRules lists a file's host-only imports and, unless only imports are
// asked for, its calls of the process's clock.
func fileRules(f *ast.File, importsOnly bool) []string {
	var out []string
	for _, p := range fileImports(f) {
		if hostOnly(p) {
			out = append(out, "import "+p)
		}
	}
	if importsOnly {
		return out
	}
	timeName := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"time"` {
			timeName = "time"
			if im.Name != nil {
				timeName = im.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				out = append(out, "time."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

// packageClock lists the calls of the process's clock in a package's
// non-test files.
func packageClock(t *testing.T, pkg *listedPackage) []string {
	var out []string
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(pkg.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range fileRules(f, false) {
			if strings.HasPrefix(rule, "time.") {
				out = append(out, rule)
			}
		}
	}
	return out
}

// hostSide are the names of Temporal's workflow package that code outside
// a workflow uses: registering the workflow on a worker, and a context
// propagator's header carriers on the client and the activities.
var hostSide = map[string]bool{"RegisterOptions": true, "HeaderWriter": true, "HeaderReader": true, "ContextPropagator": true}

// usesWorkflowAPI says whether a file's code runs in a workflow: it names
// the SDK's workflow package (as it is imported) for anything but what the
// host side uses — workflow.Context, workflow.ExecuteActivity, … (a
// workflow's Workspace that starts activities names no Context and is
// workflow code all the same).
func usesWorkflowAPI(f *ast.File) bool {
	wf := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"go.temporal.io/sdk/workflow"` {
			wf = "workflow"
			if im.Name != nil {
				wf = im.Name.Name
			}
		}
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && wf != "" && id.Name == wf && !hostSide[sel.Sel.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	Imports    []string
}

// listDeps is go list -deps -json of a package: it and every package it
// reaches, by import path.
func listDeps(t *testing.T, pkg string) map[string]*listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

// workflowImpureKnown are the breaks the Temporal workflow code has: a
// list that only shrinks, as TestEnginePure's, and is empty. A line that
// no longer holds fails too, so that it is struck out the day it is fixed.
var workflowImpureKnown = []string{}

// TestTemporalWorkflowIsPureTransitively is TestEngineIsPureTransitively
// for the code that runs inside Temporal workflow functions (issue 35,
// item 4): nothing it reaches, however indirectly, touches the disk, the
// network, programs or the process's clock other than through Temporal's
// workflow API, or a replay could diverge and a worker without the
// repository fail the workflow.
func TestTemporalWorkflowIsPureTransitively(t *testing.T) {
	got, files := workflowImpure(t)
	for _, want := range []string{"workflow.go", "leaves.go", "workspace.go", "tracecontext.go"} {
		if !slices.Contains(files, want) {
			t.Errorf("temporal/%s is not taken for workflow code (found %q)", want, files)
		}
	}
	if slices.Contains(files, "tracecontext_host.go") || slices.Contains(files, "worker.go") {
		t.Errorf("host-side files taken for workflow code: %q", files)
	}
	if len(files) == 0 {
		t.Fatal("found no workflow code: package temporal's files that use the workflow API")
	}
	for _, g := range got {
		if !slices.Contains(workflowImpureKnown, g) {
			t.Errorf("new: %s", g)
		}
	}
	for _, k := range workflowImpureKnown {
		if !slices.Contains(got, k) {
			t.Errorf("fixed, strike it from workflowImpureKnown: %s", k)
		}
	}
}
