package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/schema"
)

// FuzzLoadAndRun holds the loader and the engine to one promise together:
// whatever flows.Load accepts, the engine runs without panicking (a called
// flow given as a path once passed validate and then panicked the run). It
// loads the input, and when it loads, dry-runs the plan: drivers and
// commands that answer at once, no one at the terminal, the run directory
// in a temporary directory, and 300 ms before the run is stopped; on each
// host (the local one and the one in memory). A failed run is fine; a
// panic, or a run slow to end once stopped, is not.
//
// Seeds: the examples, the loader's golden and hostile archives, and the
// corpus under testdata/fuzz/FuzzLoadAndRun.
func FuzzLoadAndRun(f *testing.F) {
	for _, pattern := range []string{"../examples/*.yaml", "../flows/testdata/ok/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, path := range files {
			if src, err := os.ReadFile(path); err == nil {
				f.Add(src)
			}
		}
	}
	for _, pattern := range []string{"../flows/testdata/*.txtar", "../flows/testdata/hostile/*.txtar"} {
		archives, _ := filepath.Glob(pattern)
		for _, path := range archives {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range ar.Files {
				if strings.HasSuffix(file.Name, ".yaml") {
					f.Add(file.Data)
				}
			}
		}
	}
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	// A flow the fuzzed one may call beside it, and one in a directory
	// below, which a call by path would reach.
	callee := "name: callee\ninput: any\nnodes:\n  - {id: echo, run: [echo, \"${{ input }}\"]}\n"
	for _, p := range []string{"callee.yaml", filepath.Join("sub", "callee.yaml")} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(callee), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	load := flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: []string{"pi", "claude", "codex", "openai", "exec"}}
	drivers := map[string]Driver{}
	for _, name := range load.Drivers {
		drivers[name] = dryDriver{}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		plan, _ := flows.LoadSource(filepath.Join(dir, "fuzz.yaml"), src, load)
		if plan == nil {
			return
		}
		for _, h := range hosts {
			ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, ErrStopped)
			start := time.Now()
			_, _, _ = h.walk(ctx, t, plan, local.Config{Drivers: drivers, Commands: dryCommands{}, WorkDir: dir}, Options{Input: zeroOf(plan.Root.Input), Backoff: time.Millisecond})
			cancel()
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the run on the %s host ended %v after it started, though stopped after 300 ms:\n%s", h.name, took, src)
			}
		}
	})
}

// dryDriver answers every turn at once.
type dryDriver struct{}

func (dryDriver) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	out := "ok"
	if t.OutputSchema != nil {
		out = "{}"
	}
	in := int64(1)
	return &TurnResult{Status: Completed, Output: out, Usage: record.Usage{Input: &in}}, ctx.Err()
}

// dryCommands runs every command at once, successfully.
type dryCommands struct{}

func (dryCommands) Run(ctx context.Context, c *Command) (*CommandResult, error) {
	return &CommandResult{Passed: true, Report: c.Script + strings.Join(c.Argv, " ")}, ctx.Err()
}

// zeroOf is the smallest value of a declared input: empty strings and
// lists, zero numbers, objects with their required fields.
func zeroOf(t *schema.Type) any {
	if t == nil {
		return ""
	}
	switch t.Kind {
	case schema.TString:
		return ""
	case schema.TInteger, schema.TNumber:
		return 0
	case schema.TBoolean:
		return false
	case schema.TList:
		return []any{}
	case schema.TObject:
		m := map[string]any{}
		for _, f := range t.Fields {
			if !f.Optional && !f.Type.HasDefault {
				m[f.Name] = zeroOf(f.Type)
			}
		}
		return m
	}
	return nil
}

// fuzzSeeds use every kind of node, so that mutations start from flows that
// load and run.
var fuzzSeeds = []string{
	`name: fuzz
input: {goal: string, items?: [integer], n: {type: integer, default: 2}}
agents:
  - {name: worker, description: works, driver: exec, command: [w]}
nodes:
  - {id: plan, agent: worker, prompt: "${{ input.goal }}", output: {steps: [string], done: boolean}}
  - id: each
    map: 1..input.n
    max: 5
    concurrency: 2
    do:
      - {id: step, run: "echo ${{ item }} '${{ plan.output.done }}'"}
  - id: review
    loop: {until: check.ok, max: 3}
    do:
      - {id: check, agent: worker, memory: review, prompt: "again ${{ review.iteration }}", reads: [review.previous.check]}
  - id: pick
    choice:
      - when: review.output.converged
        do: [{id: yes, flow: callee, input: each.output}]
      - else: [{id: no, ask: Ship?, options: [ship, hold], default: hold}]
  - id: both
    parallel:
      a: [{id: left, run: [echo, a], on_fail: continue}]
      b: [{id: right, run: "printf '%s' \"${{ pick.output }}\"", timeout: 1s}]
    fail_fast: true
`,
	"name: fuzz\nnodes:\n  - {id: call, flow: callee, input: '[1, {\"a\": 2}]'}\n",
	"name: fuzz\nnodes:\n  - id: l\n    loop: {until: 'false', max: 1000000}\n    do: [{id: r, run: [true]}]\n",
}
