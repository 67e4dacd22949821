package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/schema"
)

// A run's declared input refuses a key it does not declare, at any depth,
// naming the closest declared field: a typo'd key used to run on the
// defaults.
func TestInputRefusesUnknownKeys(t *testing.T) {
	p := load(t, "typo", `name: typo
input:
  file: {type: string, default: README.md}
  opts?: {depth: integer}
nodes:
  - {id: a, run: [echo, "${{ input.file }}"]}
`)
	onHosts(t, func(t *testing.T, h host) {
		for _, c := range []struct {
			in   any
			want string
		}{
			{map[string]any{"fiel": "x"}, `unknown field "fiel"; did you mean "file"? (declared: file, opts)`},
			{map[string]any{"opts": map[string]any{"dept": 2}}, `unknown field "dept" at opts; did you mean "depth"?`},
		} {
			_, _, err := h.walk(context.Background(), t, p, local.Config{Commands: fakeCommands{}}, Options{Input: c.in})
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("input %v: got %v, want an InputError saying %q", c.in, err, c.want)
			}
		}
		if res, _ := executeOn(t, h, p, &fakeDriver{}, Options{Input: map[string]any{"file": "x"}}); !res.OK {
			t.Errorf("a declared input was refused: %v", res.Failure)
		}
	})
}

// A called flow's input may hold more than the callee declares: a caller
// passes on what it has.
func TestCallInputMayHoldMore(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "callee.yaml", "name: callee\ninput: {a: integer}\nnodes:\n  - {id: x, run: [echo, \"${{ input.a }}\"]}\n")
	p := loadBeside(t, dir, "caller", "name: caller\nnodes:\n  - {id: c, flow: callee, input: '{\"a\": 1, \"b\": 2}'}\n")
	onHosts(t, func(t *testing.T, h host) {
		if res, _ := executeOn(t, h, p, &fakeDriver{}, Options{}); !res.OK {
			t.Errorf("the call failed: %v", res.Failure)
		}
	})
}

// A value that holds a NUL byte cannot reach a command: the visit fails
// `condition`, saying which value, before anything starts.
func TestNULValueIsACondition(t *testing.T) {
	p := load(t, "nul", "name: nul\ninput: {v: string}\nnodes:\n  - {id: s, run: \"echo ${{ input.v }}\", on_fail: continue}\n  - {id: a, run: [echo, \"${{ input.v }}\"]}\n")
	onHosts(t, func(t *testing.T, h host) {
		res, facts := executeOn(t, h, p, &fakeDriver{}, Options{Input: map[string]any{"v": "a\x00b"}})
		if res.OK || res.Failure.Root().Kind != schema.FailCondition {
			t.Fatalf("want a condition failure, got %+v", res.Failure)
		}
		n := 0
		for _, f := range facts {
			if f.Visit != "" && f.Error != nil && f.Error.Kind == schema.FailCondition && strings.Contains(f.Error.Message, "NUL") {
				n++
			}
		}
		if n != 2 {
			t.Errorf("%d visits failed on the NUL byte, want 2 (script and argv)", n)
		}
	})
}

// loadBeside loads name.yaml written in dir, beside the flows it calls.
func loadBeside(t *testing.T, dir, name, src string) *flows.Plan {
	t.Helper()
	writeFile(t, dir, name+".yaml", src)
	p, diags := flows.Load(filepath.Join(dir, name+".yaml"), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	return p
}
