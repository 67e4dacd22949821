package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// The hostile-input cases of the run directory's paths and files (issue
// 23): a run directory is data a repository may carry, so nothing in it
// makes flow delete or write elsewhere.

// craftRun writes a run directory under dir/.flow/runs that a repository
// could carry: an ended run whose journal says it kept a worktree at path.
func craftRun(t *testing.T, dir, id, repo, path string) string {
	t.Helper()
	run := filepath.Join(dir, ".flow", "runs", id)
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	facts := []record.Fact{
		{Type: record.FactRun, Time: now, RunID: id, Flow: "crafted", Status: record.StatusRunning},
		{Type: record.FactWorktree, Time: now, Worktree: &record.Worktree{Scope: "w", Repo: repo, Path: path, Branch: "flow/" + id + ".w"}},
		{Type: record.FactRun, Time: now, RunID: id, Status: record.StatusFailed},
	}
	var b strings.Builder
	for _, f := range facts {
		line, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(run, "journal.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return run
}

// victim is a directory with a file that must survive.
func victim(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(file, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func mustSurvive(t *testing.T, file string) {
	t.Helper()
	if b, err := os.ReadFile(file); err != nil || string(b) != "precious\n" {
		t.Fatalf("%s was touched: %q, %v", file, b, err)
	}
}

// A crafted journal naming a directory outside the run as its kept
// worktree: flow gc deletes nothing and says what it left alone.
func TestHostileGCLeavesAlonePathsOutsideTheRun(t *testing.T) {
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{"README": "hi\n"})
	far, file := victim(t)
	craftRun(t, dir, "20260101-000000-aaaaaa", dir, far)
	// A journal naming the repository itself, and one naming the run's
	// own directory from outside by "..".
	craftRun(t, dir, "20260101-000000-bbbbbb", dir, dir)
	run := filepath.Join(dir, ".flow", "runs", "20260101-000000-cccccc")
	craftRun(t, dir, "20260101-000000-cccccc", dir, filepath.Join(run, "worktrees", "..", "..", "..", ".."))
	out, err := flowIn(t, env, dir, "gc")
	if err != nil {
		t.Fatalf("flow gc: %v\n%s", err, out)
	}
	mustSurvive(t, file)
	if _, err := os.Stat(filepath.Join(dir, "README")); err != nil {
		t.Fatalf("flow gc removed the repository: %v\n%s", err, out)
	}
	if !strings.Contains(out, "left alone "+far) || strings.Contains(out, "removed ") {
		t.Fatalf("flow gc must say it left %s alone, and remove nothing:\n%s", far, out)
	}
}

// A worktrees/ directory that is a link to elsewhere: what the journal
// names under it is outside the run, and flow gc leaves it alone.
func TestHostileGCDoesNotFollowALinkedWorktreesDir(t *testing.T) {
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{"README": "hi\n"})
	far, file := victim(t)
	if err := os.MkdirAll(filepath.Join(far, "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(far, "w", "precious.txt")
	if err := os.WriteFile(inner, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := "20260101-000000-dddddd"
	run := craftRun(t, dir, id, dir, filepath.Join(dir, ".flow", "runs", id, "worktrees", "w"))
	if err := os.Symlink(far, filepath.Join(run, "worktrees")); err != nil {
		t.Fatal(err)
	}
	out, err := flowIn(t, env, dir, "gc")
	if err != nil {
		t.Fatalf("flow gc: %v\n%s", err, out)
	}
	mustSurvive(t, file)
	mustSurvive(t, inner)
	if !strings.Contains(out, "left alone") {
		t.Fatalf("flow gc must warn of what it left alone:\n%s", out)
	}
}

// failedRun runs a flow whose only step fails, in dir, and returns its
// run directory: a run flow resume takes up again.
func failedRun(t *testing.T, dir string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "once.yaml"), []byte(`name: once
agents:
  - {name: once, description: fails once, driver: exec, command: [sh, -c, 'cat >/dev/null; test -f ok && echo done']}
nodes:
  - {id: s, agent: once, prompt: Go.}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := flowIn(t, nil, dir, "run", "once.yaml"); err == nil {
		t.Fatalf("the run should fail:\n%s", out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	return runs[0]
}

// flow resume of a run whose journal or events file is a link: an error
// that says so, and the file it points at is not touched.
func TestHostileResumeRefusesLinkedRunFiles(t *testing.T) {
	for _, name := range []string{"journal.jsonl", "events.jsonl", "usage.json", "report.html", "values.json"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			run := failedRun(t, dir)
			_, file := victim(t)
			p := filepath.Join(run, name)
			if name == "journal.jsonl" {
				// The journal it links to is a real one, so only the link
				// stands in the way.
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				file = filepath.Join(t.TempDir(), "journal.jsonl")
				if err := os.WriteFile(file, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(file)
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if name != "journal.jsonl" && name != "events.jsonl" {
				// Written aside and renamed: the link is on the file beside.
				p = filepath.Join(run, "."+name+".tmp")
			}
			if err := os.Symlink(file, p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := flowIn(t, nil, dir, "resume", filepath.Base(run))
			after, _ := os.ReadFile(file)
			if string(after) != string(before) {
				t.Fatalf("flow resume wrote through the link %s: %q became %q\n%s", p, before, after, out)
			}
			if name == "journal.jsonl" || name == "events.jsonl" {
				if err == nil || !strings.Contains(out, "symbolic link") {
					t.Fatalf("flow resume must refuse the linked %s, saying so: %v\n%s", name, err, out)
				}
			}
		})
	}
}

// flow resume of a run whose journal names a worktree outside the run:
// the path is left alone, the run says so, and the scope works in a
// worktree of its own.
func TestHostileResumeLeavesAloneWorktreesOutsideTheRun(t *testing.T) {
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{
		"once.yaml": `name: once
agents:
  - {name: edit, description: fails once, driver: exec, command: [bash, -c, 'cat >/dev/null; test -f "$OK" && echo edited > notes.txt && echo edited']}
nodes:
  - {id: w, agent: edit, isolation: worktree, prompt: Edit.}
`,
		"notes.txt": "notes\n"})
	ok := filepath.Join(t.TempDir(), "ok")
	env = append(env, "OK="+ok)
	out, err := flowIn(t, env, dir, "run", "once.yaml")
	if err == nil {
		t.Fatalf("flow run should fail:\n%s", out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	run := runs[0]
	far, file := victim(t)
	journal := filepath.Join(run, "journal.jsonl")
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(run, "worktrees", "w")
	if !strings.Contains(string(b), kept) {
		t.Fatalf("the journal does not name %s:\n%s", kept, b)
	}
	if err := os.WriteFile(journal, []byte(strings.ReplaceAll(string(b), kept, far)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = flowIn(t, env, dir, "resume", filepath.Base(run))
	mustSurvive(t, file)
	if err != nil || !strings.Contains(out, "outside the run's worktrees directory: left alone") {
		t.Fatalf("flow resume must succeed and say it left %s alone: %v\n%s", far, err, out)
	}
	if got := gitCmd(t, env, dir, "show", "flow/"+filepath.Base(run)+":notes.txt"); got != "edited" {
		t.Fatalf("the scope did not land from a worktree of its own: %q", got)
	}
	out, err = flowIn(t, env, dir, "gc")
	mustSurvive(t, file)
	if err != nil {
		t.Fatalf("flow gc: %v\n%s", err, out)
	}
}

// flow resume of a run with a link in its homes that leads elsewhere — a
// visit's home, or the live log the exec driver appends to — refuses,
// saying so, and writes nothing through it. On main the resume appended
// the agent's output to the linked file, and its transcript into the
// linked directory.
func TestHostileResumeRefusesLinksOutOfTheHomes(t *testing.T) {
	for _, c := range []struct{ name, link string }{{"home", "home/s"}, {"live log", "home/s/once.log"}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			run := failedRun(t, dir)
			vdir, file := victim(t)
			target := vdir
			if c.link == "home/s/once.log" {
				target = file
			}
			p := filepath.Join(run, filepath.FromSlash(c.link))
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := flowIn(t, nil, dir, "resume", filepath.Base(run))
			mustSurvive(t, file)
			if entries, _ := os.ReadDir(vdir); len(entries) != 1 {
				t.Errorf("flow resume wrote into the linked directory: %v", entries)
			}
			if err == nil || !strings.Contains(out, "leads out of the run directory") {
				t.Fatalf("flow resume must refuse the link %s, saying so: %v\n%s", c.link, err, out)
			}
		})
	}
}
