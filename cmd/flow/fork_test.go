package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// TestForkWritersRedoesOneScope: examples/writers.yaml forked at its second
// writer re-does only that writer's scope; the other writers' changes are
// reused (made again from the original run's commits, not by their agents)
// and land on the fork's own branch in item order; the original run's
// branch does not move. The example's scratch node says reuse: never, so
// the fork makes a scratch repository of its own, and the reused writers'
// changes are made again there.
func TestForkWritersRedoesOneScope(t *testing.T) {
	runs, flow := examplesCopy(t)
	flow("run", "examples/writers.yaml")
	list, err := rundir.List(runs)
	if err != nil || len(list) != 1 {
		t.Fatalf("runs: %v %v", list, err)
	}
	orig := list[0]
	repo := scratchRepo(t, orig.Dir)
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	before := git("rev-parse", "flow/"+orig.ID)

	out := flow("fork", orig.ID, "--at", "write[2]/note")
	if !strings.Contains(out, "All 3 notes landed, in order: alpha, beta, gamma.") {
		t.Errorf("the fork's reviewer did not see every note land:\n%s", out)
	}
	if list, err = rundir.List(runs); err != nil || len(list) != 2 {
		t.Fatalf("runs: %v %v", list, err)
	}
	fork := list[0]
	if fork.ForkedFrom == nil || fork.ForkedFrom.Run != orig.ID || fork.ForkedFrom.Visit != "write[2]/note" {
		t.Errorf("the fork's origin: %+v", fork.ForkedFrom)
	}
	if after := git("rev-parse", "flow/"+orig.ID); after != before {
		t.Errorf("the original run's branch moved: %s → %s", before, after)
	}
	facts, err := rundir.ReadJournal(fork.Dir)
	if err != nil {
		t.Fatal(err)
	}
	reused := map[string]bool{}
	for _, v := range rundir.Visits(facts) {
		if v.End != nil {
			reused[v.End.Visit] = v.End.Reused != nil
		}
	}
	want := map[string]bool{"scratch": false, "write[1]/note": true, "write[2]/note": false, "write[3]/note": true, "landed": false, "review": false}
	for visit, r := range want {
		if got, ok := reused[visit]; !ok || got != r {
			t.Errorf("%s reused %v (ended: %v), want reused %v", visit, got, ok, r)
		}
	}
	forkRepo := scratchRepo(t, fork.Dir)
	out2, err := exec.Command("git", "-C", forkRepo, "log", "--first-parent", "--format=%s", "main..flow/"+fork.ID).CombinedOutput()
	if err != nil {
		t.Fatalf("the fork's branch: %v\n%s", err, out2)
	}
	landed := string(out2)
	for _, note := range []string{"write[1]", "write[2]", "write[3]"} {
		if !strings.Contains(landed, note) {
			t.Errorf("%s did not land on the fork's branch:\n%s", note, landed)
		}
	}
}

// examplesCopy is a copy of examples/ in a directory of its own, with a
// home and git configuration of the test's, and flow run there with its
// runs in runs: a failed command fails the test.
func examplesCopy(t *testing.T) (runs string, flow func(args ...string) string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the examples: %v\n%s", err, out)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	bin := flowBinary(t)
	runs = t.TempDir()
	return runs, func(args ...string) string {
		t.Helper()
		out, err := command(bin, dir, runs, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("flow %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
}

// scratchRepo is the repository writers' scratch node made in the run in
// dir (its report).
func scratchRepo(t *testing.T, dir string) string {
	t.Helper()
	facts, err := rundir.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Node == "scratch" {
			out, _ := f.Output.(map[string]any)
			if repo, _ := out["report"].(string); repo != "" {
				return repo
			}
		}
	}
	t.Fatalf("the run in %s made no repository", dir)
	return ""
}
