package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
)

// gitRepo makes a repository with one commit (notes.txt holding three
// lines) and keeps the user's git configuration out of the test.
func gitRepo(t *testing.T) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "notes.txt", "one\ntwo\nthree\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "start")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=user", "-c", "user.email=user@example.invalid"}, args...)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadIn loads a flow whose working directory is dir.
func loadIn(t *testing.T, dir, name, src string) *flows.Plan {
	t.Helper()
	file := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	return p
}

// writer is a driver whose turns edit files in their working directory:
// edit says what each visit writes; delay how long it takes.
type writer struct {
	edit  func(t *Turn) map[string]string
	delay func(t *Turn) time.Duration
	mu    sync.Mutex
	dirs  map[string]string // visit → working directory
	done  []string          // visits in the order they finished
}

func (w *writer) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	if w.delay != nil {
		select {
		case <-ctx.Done():
			return &TurnResult{Status: Aborted}, ctx.Err()
		case <-time.After(w.delay(t)):
		}
	}
	for name, content := range w.edit(t) {
		p := filepath.Join(t.WorkDir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirs == nil {
		w.dirs = map[string]string{}
	}
	w.dirs[t.Visit] = t.WorkDir
	w.done = append(w.done, t.Visit)
	return &TurnResult{Status: Completed, Output: "wrote in " + t.WorkDir, Session: "s"}, nil
}

func runIn(t *testing.T, dir string, p *flows.Plan, d Driver) (*Result, []*record.Fact) {
	t.Helper()
	res, err := local.Execute(context.Background(), p, local.Config{Drivers: map[string]Driver{"exec": d}, Commands: fakeCommands{}, RunsDir: t.TempDir(), WorkDir: dir}, Options{Backoff: time.Millisecond})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return res, facts
}

// untouched fails unless the user's branch, index and working tree are as
// gitRepo left them, and no worktree of a run is left.
func untouched(t *testing.T, dir, head string) {
	t.Helper()
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("the user's HEAD moved: %s, was %s", got, head)
	}
	if got := git(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("the user's branch changed: %s", got)
	}
	if got := git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("the user's working tree changed:\n%s", got)
	}
	if got := git(t, dir, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", got)
	}
}

func TestWritersLandInItemOrder(t *testing.T) {
	for _, where := range []string{"map", "agent"} {
		t.Run("isolation on the "+where, func(t *testing.T) {
			dir := gitRepo(t)
			head := git(t, dir, "rev-parse", "HEAD")
			onMap, onAgent := "    isolation: worktree\n", ""
			if where == "agent" {
				onMap, onAgent = "", "        isolation: worktree\n"
			}
			p := loadIn(t, dir, "fan", `name: fan
`+agents+`nodes:
  - id: write
    map: '["a", "b", "c"]'
    max: 3
    concurrency: 3
`+onMap+`    do:
      - id: w
        agent: worker
`+onAgent+`        prompt: Write ${{ item }}.
  - id: after
    agent: judge
    prompt: 'landed ${{ write.output[0].ok }}'
`)
			// Item 3 ends first, then 2, then 1: each waits for the one after it.
			finished := map[string]chan struct{}{"1": make(chan struct{}), "2": make(chan struct{}), "3": make(chan struct{})}
			d := &writer{
				edit: func(t *Turn) map[string]string {
					if !strings.HasPrefix(t.Visit, "write[") {
						return nil
					}
					item := t.Visit[len("write[") : len("write[")+1] // write[1]/w → 1
					return map[string]string{"file" + item + ".txt": "written by " + t.Visit + "\n"}
				},
				delay: func(t *Turn) time.Duration {
					if !strings.HasPrefix(t.Visit, "write[") {
						return 0
					}
					item := t.Visit[len("write[") : len("write[")+1]
					if next := map[string]string{"1": "2", "2": "3"}[item]; next != "" {
						select {
						case <-finished[next]:
						case <-time.After(10 * time.Second):
						}
					}
					time.AfterFunc(50*time.Millisecond, func() { close(finished[item]) })
					return 0
				},
			}
			res, facts := runIn(t, dir, p, d)
			if !res.OK {
				t.Fatalf("run failed: %v", res.Failure)
			}
			if !slices.Equal(d.done[:3], []string{"write[3]/w", "write[2]/w", "write[1]/w"}) {
				t.Fatalf("the writers did not finish in reverse order: %q", d.done)
			}
			integration := "flow/" + res.RunID
			got := git(t, dir, "log", "--first-parent", "--reverse", "--format=%s", integration)
			want := "start\nflow: land write[1]/w\nflow: land write[2]/w\nflow: land write[3]/w"
			if where == "map" {
				want = "start\nflow: land write[1]\nflow: land write[2]\nflow: land write[3]"
			}
			if got != want {
				t.Fatalf("landed history:\n%s\nwant:\n%s", got, want)
			}
			if got := git(t, dir, "show", integration+":file2.txt"); got != "written by write[2]/w" {
				t.Fatalf("file2.txt on %s: %q", integration, got)
			}
			untouched(t, dir, head)
			if got := git(t, dir, "branch", "--list", "flow/*"); strings.TrimSpace(got) != integration {
				t.Errorf("branches left besides the integration branch:\n%s", got)
			}
			for v, w := range d.dirs {
				if strings.HasPrefix(v, "write[") && !strings.Contains(w, filepath.Join(res.Dir, "worktrees")) {
					t.Errorf("a writer worked in %s, not in a worktree of the run", w)
				}
			}
			if n := len(record.Kept(facts)); n != 0 {
				t.Errorf("%d worktrees kept", n)
			}
		})
	}
}

func TestConflictFailsTheSecondAndRoutes(t *testing.T) {
	dir := gitRepo(t)
	head := git(t, dir, "rev-parse", "HEAD")
	p := loadIn(t, dir, "clash", `name: clash
`+agents+`nodes:
  - id: w1
    agent: worker
    isolation: worktree
    prompt: Edit line two.
  - id: w2
    agent: worker
    isolation: worktree
    on_fail: continue
    prompt: Edit line two too.
  - id: route
    choice:
      - when: w2.error.kind == "conflict"
        do:
          - {id: fix, agent: judge, prompt: 'Fix ${{ w2.worktree.branch }} (landed ${{ w2.worktree.landed }}, ${{ w1.worktree.landed }})'}
      - else:
          - {id: nothing, agent: judge, prompt: Nothing to fix.}
`)
	d := &writer{edit: func(t *Turn) map[string]string {
		if t.Agent.Name == "judge" {
			return nil
		}
		return map[string]string{"notes.txt": "one\n" + t.Visit + "\nthree\n"}
	}}
	var prompts sync.Map
	wrapped := driverFunc(func(ctx context.Context, t *Turn) (*TurnResult, error) {
		prompts.Store(t.Visit, t.Prompt)
		return d.Turn(ctx, t)
	})
	res, facts := runIn(t, dir, p, wrapped)
	if !res.OK {
		t.Fatalf("run failed: %v", res.Failure)
	}
	fix, ok := prompts.Load("route/fix")
	if !ok {
		t.Fatalf("the conflict did not route to the fixer; visits: %q", ended(facts))
	}
	branch := "flow/" + res.RunID + ".w2"
	if !strings.Contains(fix.(string), "Fix "+branch+" (landed false, true)") {
		t.Fatalf("the fixer's prompt: %s", fix)
	}
	if got := git(t, dir, "show", "flow/"+res.RunID+":notes.txt"); got != "one\nw1\nthree" {
		t.Fatalf("the first did not land: %q", got)
	}
	if got := git(t, dir, "show", branch+":notes.txt"); got != "one\nw2\nthree" {
		t.Fatalf("the second's branch is not kept: %q", got)
	}
	kept := record.Kept(facts)
	if len(kept) != 1 || kept[0].Scope != "w2" || kept[0].Land != record.LandConflict {
		t.Fatalf("kept worktrees: %+v", kept)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("the user's HEAD moved")
	}
	var conflict *record.Fact
	for _, f := range facts {
		if f.Type == record.FactLand && f.Visit == "w2" {
			conflict = f
		}
	}
	if conflict == nil || conflict.Error == nil || conflict.Error.Kind != "conflict" || !strings.Contains(conflict.Error.Message, "notes.txt") {
		t.Fatalf("the land fact of w2: %+v", conflict)
	}
	for _, v := range rundir.Visits(facts) {
		if v.Start.Visit == "w2" && (v.End == nil || v.End.Succeeded()) {
			t.Fatalf("flow show would read w2 as succeeded: %+v", v.End)
		}
	}
}

type driverFunc func(ctx context.Context, t *Turn) (*TurnResult, error)

func (f driverFunc) Turn(ctx context.Context, t *Turn) (*TurnResult, error) { return f(ctx, t) }

func TestParallelBranchesLandInDeclarationOrder(t *testing.T) {
	dir := gitRepo(t)
	p := loadIn(t, dir, "par", `name: par
`+agents+`nodes:
  - id: both
    parallel:
      first: [{id: w1, agent: worker, prompt: Edit.}]
      second: [{id: w2, agent: worker, prompt: Edit.}]
    isolation: worktree
    on_fail: continue
  - id: after
    agent: judge
    prompt: '${{ both.worktree.first.landed }} ${{ both.worktree.second.landed }} ${{ both.error.kind }}'
`)
	d := &writer{
		edit: func(t *Turn) map[string]string {
			if t.Agent.Name == "judge" {
				return map[string]string{"judged": t.Prompt}
			}
			return map[string]string{"notes.txt": "one\n" + t.Visit + "\nthree\n"}
		},
		delay: func(t *Turn) time.Duration {
			if t.Visit == "both/first/w1" {
				return 300 * time.Millisecond
			}
			return 0
		},
	}
	var prompt string
	res, facts := runIn(t, dir, p, driverFunc(func(ctx context.Context, t *Turn) (*TurnResult, error) {
		if t.Visit == "after" {
			prompt = t.Prompt
		}
		return d.Turn(ctx, t)
	}))
	if !res.OK {
		t.Fatalf("run failed: %v", res.Failure)
	}
	if !strings.HasPrefix(prompt, "true false child") {
		t.Fatalf("after read: %q", prompt)
	}
	if got := git(t, dir, "show", "flow/"+res.RunID+":notes.txt"); got != "one\nboth/first/w1\nthree" {
		t.Fatalf("the first branch in order did not land first: %q (finished %q)", got, d.done)
	}
	if kept := record.Kept(facts); len(kept) != 1 || kept[0].Scope != "both/second" {
		t.Fatalf("kept: %+v", kept)
	}
}

func TestMemoryScopeKeepsOneWorktreeAcrossIterations(t *testing.T) {
	for _, where := range []string{"agent", "loop"} {
		t.Run("isolation on the "+where, func(t *testing.T) {
			dir := gitRepo(t)
			head := git(t, dir, "rev-parse", "HEAD")
			onLoop, onAgent := "", "        isolation: worktree\n"
			if where == "loop" {
				onLoop, onAgent = "    isolation: worktree\n", ""
			}
			p := loadIn(t, dir, "iter", `name: iter
`+agents+`nodes:
  - id: review
    loop: {until: review.iteration >= 2, max: 3}
`+onLoop+`    do:
      - id: code
        agent: worker
        memory: review
`+onAgent+`        prompt: Add a line.
`)
			var mu sync.Mutex
			var seen []string
			res, facts := runIn(t, dir, p, driverFunc(func(ctx context.Context, t *Turn) (*TurnResult, error) {
				b, err := os.ReadFile(filepath.Join(t.WorkDir, "log.txt"))
				if err != nil && !os.IsNotExist(err) {
					return nil, err
				}
				b = append(b, t.Visit+"\n"...)
				if err := os.WriteFile(filepath.Join(t.WorkDir, "log.txt"), b, 0o644); err != nil {
					return nil, err
				}
				mu.Lock()
				seen = append(seen, t.WorkDir+" "+strings.ReplaceAll(string(b), "\n", ","))
				mu.Unlock()
				return &TurnResult{Status: Completed, Output: "ok", Session: "s"}, nil
			}))
			if !res.OK {
				t.Fatalf("run failed: %v", res.Failure)
			}
			if len(seen) != 2 {
				t.Fatalf("turns: %q", seen)
			}
			first, _, _ := strings.Cut(seen[0], " ")
			second, lines, _ := strings.Cut(seen[1], " ")
			if first != second {
				t.Fatalf("the iterations worked in two worktrees: %s, %s", first, second)
			}
			if lines != "review#1/code,review#2/code," {
				t.Fatalf("the second iteration saw %q", lines)
			}
			if got := git(t, dir, "show", "flow/"+res.RunID+":log.txt"); got != "review#1/code\nreview#2/code" {
				t.Fatalf("landed: %q", got)
			}
			untouched(t, dir, head)
			if n := len(record.Kept(facts)); n != 0 {
				t.Fatalf("%d worktrees kept", n)
			}
		})
	}
}

func TestWorktreesStartAtTheRunsStartCommit(t *testing.T) {
	dir := gitRepo(t)
	start := git(t, dir, "rev-parse", "HEAD")
	p := loadIn(t, dir, "late", `name: late
`+agents+`nodes:
  - id: meanwhile
    agent: judge
    prompt: The user commits now.
  - id: write
    agent: worker
    isolation: worktree
    prompt: Write.
`)
	var sawUserFile bool
	res, _ := runIn(t, dir, p, driverFunc(func(ctx context.Context, t *Turn) (*TurnResult, error) {
		if t.Visit == "meanwhile" {
			if err := os.WriteFile(filepath.Join(dir, "user.txt"), []byte("the user's work\n"), 0o644); err != nil {
				return nil, err
			}
			gitIn(dir, "add", "-A")
			gitIn(dir, "commit", "-q", "-m", "the user's commit during the run")
			return &TurnResult{Status: Completed, Output: "ok"}, nil
		}
		_, err := os.Stat(filepath.Join(t.WorkDir, "user.txt"))
		sawUserFile = err == nil
		if err := os.WriteFile(filepath.Join(t.WorkDir, "mine.txt"), []byte("mine\n"), 0o644); err != nil {
			return nil, err
		}
		return &TurnResult{Status: Completed, Output: "ok"}, nil
	}))
	if !res.OK {
		t.Fatalf("run failed: %v", res.Failure)
	}
	if sawUserFile {
		t.Fatal("the worktree was made from the user's moving branch, not the run's start commit")
	}
	integration := "flow/" + res.RunID
	if got := git(t, dir, "merge-base", integration, "main"); got != start {
		t.Fatalf("the integration branch starts at %s, not the run's start commit %s", got, start)
	}
	if got := git(t, dir, "log", "-1", "--format=%s", "main"); got != "the user's commit during the run" {
		t.Fatalf("the user's branch: %s", got)
	}
}

// gitIn lets a driver, which has no *testing.T, commit in the user's
// repository; it panics on failure, which fails the test.
func gitIn(dir string, args ...string) {
	c := exec.Command("git", append([]string{"-c", "user.name=user", "-c", "user.email=user@example.invalid"}, args...)...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("git %s: %v\n%s", strings.Join(args, " "), err, out))
	}
}
