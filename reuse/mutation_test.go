package reuse_test

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/exec"
	"github.com/flowrun/flow/steps/run"
)

var baseInput = map[string]any{"topic": "t", "items": []any{"3", "2", "1"}}

// copyTree copies the mutation suite's files into a directory of its own.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		info, _ := d.Info()
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s holds no %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// project is the suite's working directory, a git repository apart from
// the flow's files (a command with reuse: true is keyed by its content).
func project(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "project")
	if _, err := os.Stat(filepath.Join(p, ".git")); err != nil {
		if out, err := osexec.Command("git", "init", "-q", p).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	return p
}

// runFlow runs big.yaml in dir, reusing the run directories from, and
// returns its result and the visits that ran live (the side effects).
func runFlow(t *testing.T, dir string, input any, from ...string) (*engine.Result, []string) {
	t.Helper()
	side := filepath.Join(dir, "side")
	os.Remove(side)
	t.Setenv("SIDE", side)
	plan, diags := flows.Load(filepath.Join(dir, "big.yaml"), flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}})
	if plan == nil {
		t.Fatalf("loading: %v", diags)
	}
	cfg := local.Config{WorkDir: project(t, dir), Drivers: map[string]engine.Driver{"exec": exec.New(exec.Options{})}, Commands: run.New()}
	opts := engine.Options{Input: input}
	if len(from) > 0 {
		set, err := reuse.Open("", from...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Leaves = &reuse.Leaves{From: set, Next: local.Leaves{Drivers: cfg.Drivers, Commands: cfg.Commands}}
	}
	res, err := local.Execute(context.Background(), plan, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK {
		t.Fatalf("the run failed: %v", res.Failure.Root())
	}
	b, _ := os.ReadFile(side)
	ran := strings.Fields(string(b))
	slices.Sort(ran)
	return res, ran
}

// TestMutationSuite edits a 34-node flow (a chain, a parallel block, a map
// whose items finish in reverse order, a loop with a memory scope, a
// called flow) eight ways, each in a fresh directory elsewhere, and runs
// it reusing the unedited run: exactly the edited visit and the visits
// whose inputs it changed run again, counted by their side effects. A
// changed file of the working directory re-runs only the command that
// says reuse: true (its output is the same, so what reads it is reused).
func TestMutationSuite(t *testing.T) {
	base := copyTree(t, "testdata/mutation")
	baseRes, all := runFlow(t, base, baseInput)
	if len(all) != 36 {
		t.Fatalf("the unedited run had %d side effects, want 36: %v", len(all), all)
	}
	b, _ := os.ReadFile(filepath.Join(base, "side"))
	if order := strings.Fields(string(b)); slices.Index(order, "m[3]/it1") > slices.Index(order, "m[1]/it1") {
		t.Errorf("the map's items did not finish in reverse order: %v", order)
	}
	for _, c := range []struct {
		name   string
		mutate func(dir string)
		input  any
		want   []string
	}{
		{name: "none", want: nil},
		{name: "prompt", mutate: func(d string) { edit(t, d, "big.yaml", "D three.", "D three, again.") },
			want: []string{"d3", "d4", "d5", "d6", "last"}},
		{name: "agent file", mutate: func(d string) { edit(t, d, "agents/b.md", "b-v1", "b-v2") },
			want: []string{"c3", "last", "par/right/p3", "par/right/p4"}},
		{name: "model", mutate: func(d string) { edit(t, d, "big.yaml", "models: {m: small}", "models: {m: large}") },
			want: []string{"last", "par/mid/p5"}},
		{name: "schema", mutate: func(d string) { edit(t, d, "big.yaml", "output: {n: integer}", "output: {n: number}") },
			want: []string{"last", "ty", "ty2"}},
		{name: "run script", mutate: func(d string) { edit(t, d, "big.yaml", "echo built", "echo built again") },
			want: []string{"after_cmd", "cmd", "last"}},
		{name: "input value", input: map[string]any{"topic": "u", "items": []any{"3", "2", "1"}},
			want: []string{"c1", "c2", "c3", "last"}},
		{name: "map item added", input: map[string]any{"topic": "t", "items": []any{"4", "3", "2", "1"}},
			want: []string{"after_map", "last", "m[1]/it1", "m[1]/it2"}},
		{name: "project file changed", mutate: func(d string) { edit(t, d, "project/README", "The project", "This project") },
			want: []string{"cmd"}},
		{name: "node inserted", mutate: func(d string) {
			edit(t, d, "big.yaml", "  - {id: c3,", "  - {id: c2b, agent: a, prompt: \"Inserted.\"}\n  - {id: c3,")
		}, want: []string{"c2b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyTree(t, "testdata/mutation")
			if c.mutate != nil {
				c.mutate(dir)
			}
			input := c.input
			if input == nil {
				input = baseInput
			}
			res, ran := runFlow(t, dir, input, baseRes.Dir)
			if !slices.Equal(ran, c.want) {
				t.Errorf("ran live %v, want %v", ran, c.want)
			}
			if c.name == "none" {
				checkSaved(t, res)
			}
		})
	}
}

// TestCassetteReplaysElsewhere keeps a run as a cassette, moves it to
// another directory and replays the flow offline from a third: no agent
// runs (the drivers are not even given), the run: command runs for real.
func TestCassetteReplaysElsewhere(t *testing.T) {
	base := copyTree(t, "testdata/mutation")
	res, _ := runFlow(t, base, baseInput)
	kept := filepath.Join(t.TempDir(), "kept.cassette")
	if err := reuse.WriteCassette(res.Dir, kept); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "another", "clone.cassette")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(kept, moved); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(moved, "journal.jsonl"))
	if strings.Contains(string(b), base) || strings.Contains(string(b), res.Dir) {
		t.Errorf("the cassette names the directory it was recorded in")
	}
	dir := copyTree(t, "testdata/mutation")
	side := filepath.Join(dir, "side")
	t.Setenv("SIDE", side)
	plan, diags := flows.Load(filepath.Join(dir, "big.yaml"), flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}})
	if plan == nil {
		t.Fatal(diags)
	}
	set, err := reuse.Open("", moved)
	if err != nil {
		t.Fatal(err)
	}
	input, err := reuse.CassetteInput(moved)
	if err != nil || input == nil {
		t.Fatalf("the cassette's input: %v %v", input, err)
	}
	leaves := &reuse.Leaves{From: set, Commands: run.New(), LiveCommands: true}
	out, err := local.Execute(context.Background(), plan, local.Config{WorkDir: project(t, dir), Leaves: leaves}, engine.Options{Input: input})
	if err != nil || !out.OK {
		t.Fatalf("the replay failed: %v %v %v", err, out.Failure, leaves.Misses())
	}
	got, _ := os.ReadFile(side)
	if strings.TrimSpace(string(got)) != "cmd" {
		t.Errorf("side effects of the replay: %q, want only the command's", got)
	}
	// An edited prompt misses, naming the visit, with a diff.
	edit(t, dir, "big.yaml", "Continue.", "Continue, please.")
	plan, _ = flows.Load(filepath.Join(dir, "big.yaml"), flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}})
	leaves = &reuse.Leaves{From: set, Commands: run.New(), LiveCommands: true}
	out, err = local.Execute(context.Background(), plan, local.Config{WorkDir: project(t, dir), Leaves: leaves}, engine.Options{Input: input})
	if err != nil || out.OK {
		t.Fatalf("an edited prompt replayed: %v", err)
	}
	ms := leaves.Misses()
	if len(ms) == 0 || ms[0].Visit != "c2" || !strings.Contains(ms[0].Diff, "+Continue, please.") {
		t.Errorf("misses: %+v", ms)
	}
}

// checkSaved: a run that reused all 35 agent visits (and the command)
// spent nothing and counts what it saved, in its journal and report.
func checkSaved(t *testing.T, res *engine.Result) {
	t.Helper()
	if res.Usage.Tokens() != 0 {
		t.Errorf("the reusing run spent %d tokens", res.Usage.Tokens())
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	sv := rundir.Saved(facts)
	if sv.Visits != 36 || sv.Usage.Tokens() != 35*15 {
		t.Errorf("saved %d visits and %d tokens, want 36 and %d", sv.Visits, sv.Usage.Tokens(), 35*15)
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Node == "d3" && (f.Reused == nil || f.Reused.Visit != "d3" || f.Usage.Tokens() != 0) {
			t.Errorf("d3's end does not say it was reused at no cost: %+v", f)
		}
	}
	b, _ := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if want := `36 reused, saving <b id="saved-tokens">` + rundir.TokensText(sv.Usage); !strings.Contains(string(b), want) {
		t.Errorf("the report does not say %q", want)
	}
}
