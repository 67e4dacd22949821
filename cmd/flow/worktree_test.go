package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// gitEnv keeps the user's git configuration out of a test: a HOME of its
// own, and no system configuration.
func gitEnv(t *testing.T) []string {
	t.Helper()
	return []string{"HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
}

// repoWith makes a git repository holding files, committed once.
func repoWith(t *testing.T, env []string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	gitCmd(t, env, dir, "init", "-q", "-b", "main")
	gitCmd(t, env, dir, "add", "-A")
	gitCmd(t, env, dir, "commit", "-q", "-m", "start")
	return dir
}

func gitCmd(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=user", "-c", "user.email=user@example.invalid"}, args...)...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func flowIn(t *testing.T, env []string, dir string, args ...string) (string, error) {
	t.Helper()
	c := exec.Command(flowBinary(t), args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// The writer agent: it marks that it started, takes a while, and writes
// the note of its map item (the visit path says which) into its working
// directory.
const writerAgent = `---
name: writer
description: writes one note
driver: exec
command: [./writer.sh]
---
Write the note.
`

const writerScript = `#!/usr/bin/env bash
set -eu
item=${FLOW_VISIT#write[}
item=${item%%]*}
cat >/dev/null
touch "$MARKS/started-$item"
sleep "${WRITER_SLEEP:-0}"
echo "note $item" > "note-$item.txt"
echo "wrote note-$item.txt"
`

const twoWriters = `name: two
agents: [./agents]
nodes:
  - id: write
    map: '["a", "b"]'
    max: 2
    concurrency: 2
    isolation: worktree
    do:
      - {id: w, agent: writer, prompt: 'Write ${{ item }}.'}
`

// landedHistory is the integration branch's first-parent line: each
// landing's subject and tree, with the run id taken out.
func landedHistory(t *testing.T, env []string, dir, runID string) string {
	t.Helper()
	out := gitCmd(t, env, dir, "log", "--first-parent", "--format=%s %T", "flow/"+runID)
	return strings.ReplaceAll(out, runID, "RUN")
}

// kill -9 while two isolated writers run, then flow resume: the run ends
// with the history an uninterrupted run lands, and no scope lands twice.
func TestKillNineWhileWritersRunThenResume(t *testing.T) {
	env := gitEnv(t)
	files := map[string]string{"two.yaml": twoWriters, "agents/writer.md": writerAgent, "agents/writer.sh": writerScript, "README": "a repository\n"}

	// An uninterrupted run, for the history to compare with.
	calm := repoWith(t, env, files)
	calmEnv := append(env, "MARKS="+t.TempDir())
	if out, err := flowIn(t, calmEnv, calm, "run", "two.yaml"); err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	calmRuns, _ := filepath.Glob(filepath.Join(calm, ".flow", "runs", "*"))
	want := landedHistory(t, env, calm, filepath.Base(calmRuns[0]))

	dir := repoWith(t, env, files)
	head := gitCmd(t, env, dir, "rev-parse", "HEAD")
	marks := t.TempDir()
	runEnv := append(env, "MARKS="+marks, "WRITER_SLEEP=30")
	cmd := exec.Command(flowBinary(t), "run", "two.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), runEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, _ := os.Stat(filepath.Join(marks, "started-1"))
		b, _ := os.Stat(filepath.Join(marks, "started-2"))
		if a != nil && b != nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the writers never started:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	runID := filepath.Base(runs[0])
	info, err := rundir.Inspect(runs[0])
	if err != nil || info.Status != record.StatusInterrupted || len(info.Worktrees) != 2 {
		t.Fatalf("after kill -9: %v %+v", err, info)
	}

	// The dead run's worktrees block no other run of the repository.
	if out, err := flowIn(t, append(env, "MARKS="+t.TempDir()), dir, "run", "two.yaml"); err != nil {
		t.Fatalf("another run beside the dead one: %v\n%s", err, out)
	}

	resumed, err := flowIn(t, append(env, "MARKS="+marks), dir, "resume", runID)
	if err != nil {
		t.Fatalf("flow resume: %v\n%s", err, resumed)
	}
	if got := landedHistory(t, env, dir, runID); got != want {
		t.Fatalf("landed history after the resume:\n%s\nan uninterrupted run's:\n%s", got, want)
	}
	facts, err := rundir.ReadJournal(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	landed := map[string]int{}
	for _, f := range facts {
		if f.Type == record.FactLand && f.Worktree.Land == record.Landed {
			landed[f.Worktree.Scope]++
		}
	}
	if fmt.Sprint(landed) != "map[write[1]:1 write[2]:1]" {
		t.Fatalf("landings in the journal: %v", landed)
	}
	if got := gitCmd(t, env, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("the user's HEAD moved")
	}
	if got := gitCmd(t, env, dir, "status", "--porcelain"); got != "" {
		t.Fatalf("the user's working tree changed:\n%s", got)
	}
	if got := gitCmd(t, env, dir, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Fatalf("worktrees left:\n%s", got)
	}
}

// A conflict keeps its worktree: flow show lists it, flow gc removes it,
// and the branch stays.
func TestShowListsKeptWorktreesAndGCRemovesThem(t *testing.T) {
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{
		"clash.yaml": `name: clash
agents:
  - {name: edit, description: edits, driver: exec, command: [bash, -c, 'cat >/dev/null; echo "$FLOW_VISIT" > notes.txt; echo edited']}
nodes:
  - {id: w1, agent: edit, isolation: worktree, prompt: Edit.}
  - {id: w2, agent: edit, isolation: worktree, prompt: Edit.}
`,
		"notes.txt": "notes\n"})
	out, err := flowIn(t, env, dir, "run", "clash.yaml")
	if err == nil || !strings.Contains(out, "w2: conflict") {
		t.Fatalf("flow run should fail on the conflict: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	runID := filepath.Base(runs[0])
	out, err = flowIn(t, env, dir, "show", runID)
	if err != nil || !strings.Contains(out, "kept worktree w2") || !strings.Contains(out, "✗ w2") {
		t.Fatalf("flow show: %v\n%s", err, out)
	}
	if got := gitCmd(t, env, dir, "status", "--porcelain"); got != "" {
		t.Fatalf("the run directory shows in git status:\n%s", got)
	}
	out, err = flowIn(t, env, dir, "gc")
	if err != nil || !strings.Contains(out, "removed ") || !strings.Contains(out, "flow/"+runID+".w2 stays") {
		t.Fatalf("flow gc: %v\n%s", err, out)
	}
	if got := gitCmd(t, env, dir, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Fatalf("worktrees left:\n%s", got)
	}
	gitCmd(t, env, dir, "rev-parse", "--verify", "flow/"+runID+".w2")
	if out, _ := flowIn(t, env, dir, "show", runID); strings.Contains(out, "kept worktree") {
		t.Fatalf("flow show still lists a removed worktree:\n%s", out)
	}
}

// Without git, an isolated visit fails `unavailable` and says why.
func TestMissingGitIsUnavailable(t *testing.T) {
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{"iso.yaml": `name: iso
nodes:
  - {id: build, run: [/bin/echo, hi], isolation: worktree}
`})
	bin := flowBinary(t)
	c := exec.Command(bin, "run", "iso.yaml")
	c.Dir = dir
	c.Env = append(os.Environ(), append(env, "PATH="+filepath.Dir(bin))...)
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "build: unavailable") || !strings.Contains(string(out), "git is not installed") {
		t.Fatalf("flow run without git: %v\n%s", err, out)
	}
}

// writeTool is a tool call, in each CLI's own terms, that writes a file
// into the agent's working directory.
var writeTool = map[string]*modelserver.ToolCall{
	"pi":     {Name: "bash", Arguments: `{"command":"echo written > by-agent.txt"}`},
	"claude": {Name: "Bash", Arguments: `{"command":"echo written > by-agent.txt","description":"write a file"}`},
	"codex":  {Name: "exec_command", Arguments: `{"cmd":"echo written > by-agent.txt"}`},
}

// TestDriverWritesInItsWorktree: each agent CLI works in the isolated
// visit's worktree — a file its tool writes lands on flow/<run-id>, and the
// repository's own working tree never sees it; the turn says where it is.
func TestDriverWritesInItsWorktree(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		tool := writeTool[dc.name]
		var replies []modelserver.Reply
		if tool != nil {
			replies = append(replies, modelserver.Reply{Text: "Writing.", ToolCall: tool, Input: 100, Output: 10})
		}
		replies = append(replies, modelserver.Reply{Text: "Done.", Input: 100, Output: 5})
		s := modelserver.Start(t, replies...)
		env, frontmatter := dc.setup(t, s.URL())
		env = append(append(env, gitEnv(t)...), "FLOW_TEST_MODEL_KEY="+cliKey)
		agent := "---\nname: helper\ndescription: Helps with the test\ndriver: " + dc.name +
			"\nmodel: test-model\ntools: read, ls, bash\n" + frontmatter + "---\nYou help, briefly.\n"
		dir := repoWith(t, env, map[string]string{"agents/helper.md": agent, "README": "x\n", "f.yaml": `name: f
agents: [./agents]
nodes:
  - {id: work, agent: helper, isolation: worktree, prompt: Write by-agent.txt with a tool.}
`})
		out, err := flowIn(t, env, dir, "run", "f.yaml")
		if err != nil {
			t.Fatalf("flow run: %v\n%s", err, out)
		}
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		runID := filepath.Base(runs[0])
		if !slices.ContainsFunc(bodies(s, dc), func(b string) bool {
			return strings.Contains(b, "worktrees/work") && strings.Contains(b, "a git worktree of its own")
		}) {
			t.Error("the turn did not state the worktree it works in")
		}
		if tool != nil {
			if got := gitCmd(t, env, dir, "show", "flow/"+runID+":by-agent.txt"); got != "written" {
				t.Errorf("by-agent.txt on flow/%s: %q", runID, got)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "by-agent.txt")); err == nil {
			t.Error("the agent wrote into the repository's own working tree")
		}
		if got := gitCmd(t, env, dir, "status", "--porcelain"); got != "" {
			t.Errorf("the working tree changed:\n%s", got)
		}
	})
}
