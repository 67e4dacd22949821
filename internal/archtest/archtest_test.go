package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/flowrun/flow"

// layers lists the module's layers, lowest first (docs/architecture.md,
// where the same order is written): every package of the module is in
// one, and TestLayers fails on a package in none. Directories in one slice
// are one layer. A package may import packages of its own layer and of
// lower layers only; a package's Deps are transitive.
//
// A layer may name a directory below a top-level one (engine/record,
// internal/trace): it is then a layer of its own, apart from its parent's
// (the most specific directory wins). The ground floor is internal's
// product helpers; the walker's vocabulary (engine/record) is below the
// run directory, which stores it; reuse (the recordings that answer
// turns) is above the leaves it stands in for; the test kits are above
// everything they drive.
var layers = [][]string{
	{"internal/ordered", "internal/secret", "internal/ratelimit", "internal/proc", "internal/gitwork", "internal/sandbox"},
	{"schema"}, {"flows"}, {"engine/record"}, {"rundir"}, {"engine"}, {"steps"}, {"reuse"},
	{"temporal", "internal/trace"}, {"runner"}, {"sweep", "serve"}, {"cmd"},
	{"internal/archtest", "internal/benchflow", "internal/clitest", "internal/delegatetest", "internal/devserver", "internal/modelserver"},
}

// pkg is one package of the module with the packages it depends on.
type pkg struct {
	Path string
	Deps []string
}

// layerOf returns the index of the layer path belongs to, or -1 for packages
// outside every layer (internal helpers, the standard library, other modules).
func layerOf(path string) int {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return -1
	}
	at, best := -1, ""
	for i, l := range layers {
		for _, dir := range l {
			if (rel == dir || strings.HasPrefix(rel, dir+"/")) && len(dir) > len(best) {
				at, best = i, dir
			}
		}
	}
	return at
}

// topDir is the directory of a layer a package of the module is in: the
// most specific one (engine/record rather than engine), else its
// top-level directory.
func topDir(path string) string {
	rel := strings.TrimPrefix(path, module+"/")
	best := ""
	for _, dir := range slices.Concat(layers...) {
		if (rel == dir || strings.HasPrefix(rel, dir+"/")) && len(dir) > len(best) {
			best = dir
		}
	}
	if best != "" {
		return best
	}
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// violations returns one line per import that points from a layer to a
// higher one, sorted.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from := layerOf(p.Path)
		if from < 0 {
			continue
		}
		for _, d := range p.Deps {
			if to := layerOf(d); to > from {
				from, to := topDir(p.Path), topDir(d)
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): %s may not import %s", p.Path, from, d, to, from, to))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestViolations(t *testing.T) {
	tests := []struct {
		name string
		pkgs []pkg
		want []string
	}{
		{
			name: "allowed directions",
			pkgs: []pkg{
				{Path: module + "/schema", Deps: []string{"fmt", "github.com/goccy/go-yaml"}},
				{Path: module + "/flows", Deps: []string{module + "/schema"}},
				{Path: module + "/engine", Deps: []string{module + "/flows", module + "/schema"}},
				{Path: module + "/steps/exec", Deps: []string{module + "/engine", module + "/internal/proc"}},
				{Path: module + "/cmd/flow", Deps: []string{module + "/steps/exec", module + "/engine", module + "/internal/x"}},
				{Path: module + "/internal/x", Deps: []string{module + "/cmd/flow"}},
			},
		},
		{
			name: "schema imports engine",
			pkgs: []pkg{{Path: module + "/schema", Deps: []string{module + "/engine"}}},
			want: []string{module + "/schema (schema) imports " + module + "/engine (engine): schema may not import engine"},
		},
		{
			name: "steps import cmd, engine imports steps",
			pkgs: []pkg{
				{Path: module + "/steps/run", Deps: []string{module + "/cmd/flow", module + "/schema"}},
				{Path: module + "/engine", Deps: []string{module + "/steps/run"}},
			},
			want: []string{
				module + "/engine (engine) imports " + module + "/steps/run (steps): engine may not import steps",
				module + "/steps/run (steps) imports " + module + "/cmd/flow (cmd): steps may not import cmd",
			},
		},
		{
			name: "the run directory below the engine, sweeps beside serve",
			pkgs: []pkg{
				{Path: module + "/rundir", Deps: []string{module + "/flows"}},
				{Path: module + "/sweep", Deps: []string{module + "/engine", module + "/rundir"}},
				{Path: module + "/serve", Deps: []string{module + "/sweep"}},
			},
		},
		{
			name: "the run directory imports the engine's vocabulary, which imports the language",
			pkgs: []pkg{
				{Path: module + "/rundir", Deps: []string{module + "/engine/record", module + "/schema"}},
				{Path: module + "/engine/record", Deps: []string{module + "/schema"}},
			},
		},
		{
			name: "the engine's vocabulary imports the run directory",
			pkgs: []pkg{{Path: module + "/engine/record", Deps: []string{module + "/rundir"}}},
			want: []string{module + "/engine/record (engine/record) imports " + module + "/rundir (rundir): engine/record may not import rundir"},
		},
		{
			name: "the run directory imports the engine",
			pkgs: []pkg{{Path: module + "/rundir", Deps: []string{module + "/engine"}}},
			want: []string{module + "/rundir (rundir) imports " + module + "/engine (engine): rundir may not import engine"},
		},
		{
			name: "the lifecycle below its callers, above its backends",
			pkgs: []pkg{
				{Path: module + "/runner", Deps: []string{module + "/temporal", module + "/engine", module + "/serve"}},
				{Path: module + "/temporal", Deps: []string{module + "/runner"}},
				{Path: module + "/sweep", Deps: []string{module + "/runner"}},
			},
			want: []string{
				module + "/runner (runner) imports " + module + "/serve (serve): runner may not import serve",
				module + "/temporal (temporal) imports " + module + "/runner (runner): temporal may not import runner",
			},
		},
		{
			name: "a probe import from reuse into serve",
			pkgs: []pkg{{Path: module + "/reuse", Deps: []string{module + "/engine", module + "/serve"}}},
			want: []string{module + "/reuse (reuse) imports " + module + "/serve (serve): reuse may not import serve"},
		},
		{
			name: "a name that only starts like a layer",
			pkgs: []pkg{{Path: module + "/schema", Deps: []string{module + "/flowsx", module + "/cmdline"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.pkgs)
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestLayers checks the module's real packages. Layers that do not exist yet
// are simply absent from the listing.
func TestLayers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	// -e lists packages even when some of them do not build, so that a broken
	// package elsewhere does not hide an import of a wrong layer. .Deps is the
	// transitive closure of the non-test imports.
	cmd := exec.Command(goBin, "list", "-e",
		"-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing packages: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkgs = append(pkgs, pkg{Path: f[0], Deps: f[1:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading go list output: %v", err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list found no packages in %s", module)
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		if l := layerOf(p.Path); l >= 0 {
			seen[topDir(p.Path)] = true
		}
	}
	for _, l := range slices.Concat(layers...) {
		if !seen[l] {
			t.Logf("layer %s has no packages yet", l)
		}
	}
	for _, p := range pkgs {
		if layerOf(p.Path) < 0 {
			t.Errorf("%s is in no layer: give it one in layers and in docs/architecture.md", p.Path)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}
