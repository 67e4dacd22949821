package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hostile cases of cassettes (issue 34): flow test --record deletes
// nothing that is not a cassette, and a cassette's recorded changes come
// from the cassette, never from a repository it names.

// copyExamples copies the repository's examples into a new directory.
func copyExamples(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the examples: %v\n%s", err, out)
	}
	return dir
}

// TestHostileRecordDeletesNothingButACassette: --record --cassette DIR
// refuses, exit 2, a directory of the user's files and the project itself
// (.git included), and deletes nothing; a new directory and an existing
// cassette are written.
func TestHostileRecordDeletesNothingButACassette(t *testing.T) {
	env := gitEnv(t)
	dir := copyExamples(t)
	gitCmd(t, env, dir, "init", "-q", "-b", "main")
	gitCmd(t, env, dir, "add", "-A")
	gitCmd(t, env, dir, "commit", "-q", "-m", "start")
	tests := filepath.Join(dir, "tests")
	if err := os.MkdirAll(tests, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(tests, "precious.txt")
	if err := os.WriteFile(mine, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	bin := flowBinary(t)
	record := func(cassette string) (string, error) {
		c := command(bin, dir, runs, "test", "--record", "--cassette", cassette, "examples/count-file.yaml")
		c.Env = append(c.Env, env...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	for _, target := range []string{"tests", dir, filepath.Join(dir, "examples"), "examples/count-file.yaml"} {
		out, err := record(target)
		if code := exitCode(err); code != 2 {
			t.Errorf("--cassette %s: exit %d, want 2\n%s", target, code, out)
		}
		if !strings.Contains(out, "is not a cassette flow may replace") {
			t.Errorf("--cassette %s: no reason given:\n%s", target, out)
		}
	}
	mustSurvive(t, mine)
	for _, p := range []string{".git/HEAD", "examples/count-file.yaml", "examples/count-file.cassette/journal.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
	if out := gitCmd(t, env, dir, "status", "--porcelain", "--untracked-files=no"); out != "" {
		t.Errorf("the project changed:\n%s", out)
	}
	// A new directory, then the same again: it is a cassette now.
	for range 2 {
		if out, err := record("new.cassette"); err != nil {
			t.Fatalf("--cassette new.cassette: %v\n%s", err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.cassette", "journal.jsonl")); err != nil {
		t.Fatalf("no cassette written: %v", err)
	}
	// A cassette with a file of the user's beside its own is not one.
	extra := filepath.Join(dir, "new.cassette", "NOTES.md")
	if err := os.WriteFile(extra, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := record("new.cassette"); exitCode(err) != 2 {
		t.Errorf("a cassette holding NOTES.md was replaced: %v\n%s", err, out)
	}
	mustSurvive(t, extra)
}

// TestHostileCassetteNamesAnotherRepository: a cassette whose journal
// says an isolated visit's change is in a repository elsewhere is not
// read from there: the test fails naming the repository, and what that
// repository holds lands nowhere.
func TestHostileCassetteNamesAnotherRepository(t *testing.T) {
	env := gitEnv(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := copyExamples(t)
	// The repository elsewhere, whose one commit adds the writer's note.
	far := repoWith(t, env, map[string]string{"README.md": "far\n"})
	base := gitCmd(t, env, far, "rev-parse", "HEAD")
	if err := os.MkdirAll(filepath.Join(far, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(far, "notes", "alpha.md"), []byte("from elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, env, far, "add", "-A")
	gitCmd(t, env, far, "commit", "-q", "-m", "elsewhere")
	commit := gitCmd(t, env, far, "rev-parse", "HEAD")

	cas := filepath.Join(dir, "examples", "writers.cassette")
	if err := os.Remove(filepath.Join(cas, "changes", "write-1_note.patch")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cas, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatal(err)
		}
		if f["visit"] == "write[1]/note" {
			f["worktree"] = map[string]any{"scope": "write[1]", "base": base, "commit": commit, "files": []string{"notes/alpha.md"}}
			nl, _ := json.Marshal(f)
			l = string(nl)
		}
		lines = append(lines, l)
	}
	wt, _ := json.Marshal(map[string]any{"type": "worktree", "worktree": map[string]any{"scope": "write[1]", "repo": far}})
	lines = append([]string{string(wt)}, lines...)
	if err := os.WriteFile(filepath.Join(cas, "journal.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := command(flowBinary(t), dir, t.TempDir(), "test", "examples/writers.yaml").CombinedOutput()
	if err == nil {
		t.Fatalf("flow test landed a change read from %s:\n%s", far, out)
	}
	if !strings.Contains(string(out), "outside this run's repository") {
		t.Errorf("the failure does not say why:\n%s", out)
	}
}

// TestHostileRecordRefusesSecrets: a recording whose answer holds a
// GitHub token flow was never told of, and whose command printed a
// database URL with its password, is refused as a cassette, exit 2,
// naming the file and line of each and never the secret; nothing is
// written.
func TestHostileRecordRefusesSecrets(t *testing.T) {
	pat := "ghp_" + strings.Repeat("Zq8vW2xKp9LmN4rT7yB1", 2)[:36]
	pass := "Zq8vW2xKp9LmN4rT"
	files := map[string]string{"leak.yaml": `name: leak
agents:
  - name: leaker
    description: says a token it read
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "found GH_PAT=` + pat + `"']
nodes:
  - id: say
    agent: leaker
    prompt: Say what you found.
  - id: db
    run: echo "DATABASE_URL=postgres://app:` + pass + `@db.internal:5432/app"
`}
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := command(flowBinary(t), dir, t.TempDir(), "test", "--record", "leak.yaml")
	out, err := c.CombinedOutput()
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, out)
	}
	for _, want := range []string{"leak.cassette/journal.jsonl:1: GitHub token", "leak.cassette/journal.jsonl:2: password in a URL"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	_, refusal, _ := strings.Cut(string(out), "is not written")
	if strings.Contains(refusal, pat) || strings.Contains(refusal, pass) {
		t.Errorf("the refusal prints the secret:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "leak.cassette")); err == nil {
		t.Error("the cassette was written")
	}
}

// TestHostileGCLeavesAloneWhatIsNotARun: flow gc removes only what is
// recognisably a run directory: a directory of the user's under the runs
// directory, holding a journal.jsonl flow cannot read (and no snapshot),
// and a cassette (a journal with no run fact) stay, however old.
func TestHostileGCLeavesAloneWhatIsNotARun(t *testing.T) {
	dir := copyExamples(t)
	runs := filepath.Join(dir, "examples") // runs_dir pointed at the user's files
	notes := filepath.Join(runs, "notes")
	if err := os.MkdirAll(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "journal.jsonl"), []byte("Dear diary,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(notes, "precious.txt")
	if err := os.WriteFile(mine, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-1000 * time.Hour)
	for _, p := range []string{notes, filepath.Join(runs, "count-file.cassette")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	out, err := command(flowBinary(t), dir, runs, "gc", "--older-than", "1h").CombinedOutput()
	if err != nil {
		t.Fatalf("flow gc: %v\n%s", err, out)
	}
	mustSurvive(t, mine)
	if _, err := os.Stat(filepath.Join(runs, "count-file.cassette", "journal.jsonl")); err != nil {
		t.Errorf("the cassette is gone: %v", err)
	}
}
