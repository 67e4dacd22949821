package engine_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/flowrun/flow/schema"
)

const threeWriters = `name: three
` + agents + `nodes:
  - id: write
    map: '["a", "b", "c"]'
    max: 3
    concurrency: 3
    isolation: worktree
    do:
      - {id: w, agent: worker, prompt: 'Write ${{ item }}.'}
`

// landings counts the land facts of each scope that landed.
func landings(facts []*record.Fact) map[string]int {
	n := map[string]int{}
	for _, f := range facts {
		if f.Type == record.FactLand && f.Worktree.Land == record.Landed {
			n[f.Worktree.Scope]++
		}
	}
	return n
}

// gitOut is git's output in dir, "" when it fails: for drivers, which have
// no *testing.T.
func gitOut(dir string, args ...string) string {
	c := exec.Command("git", args...)
	c.Dir = dir
	out, _ := c.Output()
	return string(out)
}

func resumeIn(t *testing.T, runDir string, d Driver) (*Result, []*record.Fact) {
	t.Helper()
	res, err := local.Resume(context.Background(), runDir, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}}, local.Config{Drivers: map[string]Driver{"exec": d}, Commands: fakeCommands{}}, Options{Backoff: time.Millisecond})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return res, facts
}

// A run stopped while one writer runs: that writer's half-done changes are
// dropped, the others stay landed, and the resume lands the rest in order,
// each scope once.
func TestResumeAfterAStopLandsEachScopeOnceInOrder(t *testing.T) {
	dir := gitRepo(t)
	head := git(t, dir, "rev-parse", "HEAD")
	p := loadIn(t, dir, "three", threeWriters)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	var third sync.WaitGroup
	third.Add(1)
	first := driverFunc(func(ctx context.Context, t *Turn) (*TurnResult, error) {
		name := "file-" + t.Visit[len("write["):len("write[")+1] + ".txt"
		if t.Visit == "write[2]/w" {
			// Half done when the run stops: once item 1 has landed and item 3
			// has ended (and waits for this one to land).
			_ = os.WriteFile(filepath.Join(t.WorkDir, "half-done.txt"), []byte("half\n"), 0o644)
			third.Wait()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if strings.Contains(gitOut(dir, "log", "--format=%s", "flow/"+t.RunID), "flow: land write[1]") {
					break
				}
			}
			stop(ErrStopped)
			<-ctx.Done()
			return &TurnResult{Status: Aborted}, context.Cause(ctx)
		}
		if t.Visit == "write[3]/w" {
			defer third.Done()
		}
		if err := os.WriteFile(filepath.Join(t.WorkDir, name), []byte(t.Visit+"\n"), 0o644); err != nil {
			return nil, err
		}
		return &TurnResult{Status: Completed, Output: "ok"}, nil
	})
	res, err := local.Execute(ctx, p, local.Config{Drivers: map[string]Driver{"exec": first}, Commands: fakeCommands{}, RunsDir: t.TempDir(), WorkDir: dir}, Options{})
	if err != nil || res.OK || res.Status() != record.StatusStopped {
		t.Fatalf("first attempt: %v %+v", err, res.Failure)
	}
	if got := git(t, dir, "log", "--first-parent", "--reverse", "--format=%s", "flow/"+res.RunID); got != "start\nflow: land write[1]" {
		t.Fatalf("landed before the stop:\n%s", got)
	}
	var again []string
	res, facts := resumeIn(t, res.Dir, driverFunc(func(ctx context.Context, t *Turn) (*TurnResult, error) {
		again = append(again, t.Visit)
		if _, err := os.Stat(filepath.Join(t.WorkDir, "half-done.txt")); err == nil {
			return nil, os.ErrExist // the dead attempt's changes must be gone
		}
		name := "file-" + t.Visit[len("write["):len("write[")+1] + ".txt"
		return &TurnResult{Status: Completed, Output: "ok"}, os.WriteFile(filepath.Join(t.WorkDir, name), []byte(t.Visit+"\n"), 0o644)
	}))
	if !res.OK {
		t.Fatalf("resume failed: %v", res.Failure)
	}
	if len(again) != 1 || again[0] != "write[2]/w" {
		t.Fatalf("the resume ran %q, want only write[2]/w", again)
	}
	integration := "flow/" + res.RunID
	if got := git(t, dir, "log", "--first-parent", "--reverse", "--format=%s", integration); got != "start\nflow: land write[1]\nflow: land write[2]\nflow: land write[3]" {
		t.Fatalf("landed history:\n%s", got)
	}
	if got := git(t, dir, "ls-tree", "--name-only", integration); got != "file-1.txt\nfile-2.txt\nfile-3.txt\nnotes.txt" {
		t.Fatalf("files on %s:\n%s", integration, got)
	}
	for scope, n := range landings(facts) {
		if n != 1 {
			t.Errorf("%s landed %d times", scope, n)
		}
	}
	untouched(t, dir, head)
}

// The engine died after an isolated visit's end was journaled: before its
// landing moved the branch, or after. Either way the resume lands it once,
// and runs nothing again.
func TestResumeLandsWhatTheDeadEngineDidNotRecord(t *testing.T) {
	for _, moved := range []bool{false, true} {
		name := "before the branch moved"
		if moved {
			name = "after the branch moved"
		}
		t.Run(name, func(t *testing.T) {
			dir := gitRepo(t)
			p := loadIn(t, dir, "one", `name: one
`+agents+`nodes:
  - {id: w, agent: worker, isolation: worktree, prompt: Write.}
`)
			d := &writer{edit: func(*Turn) map[string]string { return map[string]string{"new.txt": "new\n"} }}
			res, _ := runIn(t, dir, p, d)
			if !res.OK {
				t.Fatalf("run: %v", res.Failure)
			}
			integration := "flow/" + res.RunID
			// Cut the journal after w's end, as a kill -9 would have.
			journal := filepath.Join(res.Dir, "journal.jsonl")
			b, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			var kept [][]byte
			for _, line := range bytes.SplitAfter(b, []byte("\n")) {
				kept = append(kept, line)
				if bytes.Contains(line, []byte(`"type":"end"`)) && bytes.Contains(line, []byte(`"visit":"w"`)) {
					break
				}
			}
			if err := os.WriteFile(journal, bytes.Join(kept, nil), 0o644); err != nil {
				t.Fatal(err)
			}
			if !moved {
				git(t, dir, "update-ref", "refs/heads/"+integration, git(t, dir, "rev-parse", "main"))
			}
			ran := 0
			res, facts := resumeIn(t, res.Dir, driverFunc(func(context.Context, *Turn) (*TurnResult, error) {
				ran++
				return &TurnResult{Status: Completed, Output: "again"}, nil
			}))
			if !res.OK || ran != 0 {
				t.Fatalf("resume: ok %v, %d turns run again: %v", res.OK, ran, res.Failure)
			}
			if got := git(t, dir, "log", "--first-parent", "--format=%s", integration); got != "flow: land w\nstart" {
				t.Fatalf("landed history:\n%s", got)
			}
			if n := landings(facts)["w"]; n != 1 {
				t.Fatalf("w landed %d times in the journal", n)
			}
			untouched(t, dir, git(t, dir, "rev-parse", "main"))
		})
	}
}

// A run that failed on a conflict resumes: the user resolved it on the
// kept branch, and the resume lands that without running the visit again.
func TestResumeLandsAConflictResolvedOnTheKeptBranch(t *testing.T) {
	dir := gitRepo(t)
	p := loadIn(t, dir, "clash", `name: clash
`+agents+`nodes:
  - {id: w1, agent: worker, isolation: worktree, prompt: Edit line two.}
  - {id: w2, agent: worker, isolation: worktree, prompt: Edit line two too.}
`)
	d := &writer{edit: func(t *Turn) map[string]string {
		return map[string]string{"notes.txt": "one\n" + t.Visit + "\nthree\n"}
	}}
	res, _ := runIn(t, dir, p, d)
	if res.OK || res.Failure.Root().Kind != schema.FailConflict {
		t.Fatalf("want a conflict, got %+v", res.Failure)
	}
	info, err := rundir.Inspect(res.Dir)
	if err != nil || !info.Resumable {
		t.Fatalf("a conflict should be resumable: %v %+v", err, info)
	}
	if len(info.Worktrees) != 1 || info.Worktrees[0].Scope != "w2" {
		t.Fatalf("kept worktrees: %+v", info.Worktrees)
	}
	// The user resolves it in the kept worktree, on its branch.
	wt := info.Worktrees[0].Path
	git(t, wt, "merge", "-q", "flow/"+res.RunID, "-X", "theirs", "-m", "resolved")
	ran := 0
	res, facts := resumeIn(t, res.Dir, driverFunc(func(context.Context, *Turn) (*TurnResult, error) {
		ran++
		return &TurnResult{Status: Completed, Output: "again"}, nil
	}))
	if !res.OK || ran != 0 {
		t.Fatalf("resume: %v, %d turns run again", res.Failure, ran)
	}
	if got := git(t, dir, "log", "--first-parent", "--format=%s", "flow/"+res.RunID); got != "flow: land w2\nflow: land w1\nstart" {
		t.Fatalf("landed history:\n%s", got)
	}
	if n := len(record.Kept(facts)); n != 0 {
		t.Fatalf("%d worktrees kept", n)
	}
}

func TestRebaseLandsLinearlyAndNoneKeepsTheBranch(t *testing.T) {
	dir := gitRepo(t)
	p := loadIn(t, dir, "modes", `name: modes
`+agents+`nodes:
  - {id: r1, agent: worker, isolation: worktree, land: rebase, prompt: Write.}
  - {id: r2, agent: worker, isolation: worktree, land: rebase, prompt: Write.}
  - {id: keep, agent: worker, isolation: worktree, land: none, prompt: Write.}
  - {id: after, agent: judge, prompt: '${{ r2.worktree.landed }} ${{ keep.worktree.landed }} ${{ keep.worktree.files }}'}
`)
	var prompt string
	d := &writer{edit: func(t *Turn) map[string]string {
		if t.Visit == "after" {
			prompt = t.Prompt
			return nil
		}
		return map[string]string{t.Visit + ".txt": t.Visit + "\n"}
	}}
	res, facts := runIn(t, dir, p, d)
	if !res.OK {
		t.Fatalf("run: %v", res.Failure)
	}
	integration := "flow/" + res.RunID
	if got := git(t, dir, "log", "--format=%s", integration); got != "flow: r2\nflow: r1\nstart" {
		t.Fatalf("rebased history:\n%s", got)
	}
	if got := git(t, dir, "show", "--format=%s", "-s", integration+"."+"keep"); got != "flow: keep" {
		t.Fatalf("the branch of land: none: %q", got)
	}
	if !strings.HasPrefix(prompt, `true false ["keep.txt"]`) {
		t.Fatalf("after read %q", prompt)
	}
	if n := len(record.Kept(facts)); n != 0 {
		t.Fatalf("%d worktrees kept", n)
	}
}
