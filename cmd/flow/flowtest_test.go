package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/rundir"
)

// offline is how these tests run flow test: with a PATH of its own that
// holds only what the examples' run: commands need (bash, git, mktemp)
// and no agent CLI, and in a network namespace of its own with no
// interface up (unshare -rn), where no socket reaches anything, not
// even this machine's loopback. Where the kernel refuses a namespace the
// proxies and the OpenAI-compatible base URL point at a closed port
// instead, and the test says so in its log; FLOW_TEST_REQUIRE_NETNS=1
// makes a missing namespace a failure (docs/decisions.md).
type offline struct {
	path    string   // the PATH directory
	unshare []string // unshare and its flags, nil without a namespace
	closed  string   // a closed local address, for the fallback
}

func newOffline(t *testing.T) *offline {
	t.Helper()
	o := &offline{path: t.TempDir()}
	for _, tool := range []string{"bash", "git", "mktemp"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(o.path, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for _, cli := range []string{"claude", "codex", "pi"} {
		if _, err := os.Stat(filepath.Join(o.path, cli)); err == nil {
			t.Fatalf("%s is on the test's PATH", cli)
		}
	}
	if u, err := exec.LookPath("unshare"); err == nil {
		for _, flags := range []string{"-rn", "-n"} { // -n alone: root where user namespaces are off
			if exec.Command(u, flags, "true").Run() == nil {
				o.unshare = []string{u, flags}
				break
			}
		}
	}
	switch {
	case o.unshare == nil && os.Getenv("FLOW_TEST_REQUIRE_NETNS") == "1":
		t.Fatal("FLOW_TEST_REQUIRE_NETNS=1, but no network namespace can be made (unshare -rn, unshare -n)")
	case o.unshare == nil:
		t.Logf("no network namespace here: the proxies point at a closed port instead")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.closed = l.Addr().String()
	l.Close()
	return o
}

// command is bin with args in dir, cut off from the agent CLIs and the
// network.
func (o *offline) command(t *testing.T, bin, dir string, args ...string) *exec.Cmd {
	t.Helper()
	runs := t.TempDir()
	argv := append([]string{bin}, args...)
	if o.unshare != nil {
		argv = append(append([]string{}, o.unshare...), argv...)
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	url := "http://" + o.closed
	c.Env = []string{"PATH=" + o.path, "HOME=" + runs, "FLOW_RUNS_DIR=" + runs, "TMPDIR=" + runs,
		"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "ALL_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url,
		"OPENAI_BASE_URL=" + url + "/v1", "ANTHROPIC_BASE_URL=" + url, "GIT_CONFIG_NOSYSTEM=1"}
	return c
}

// flowTest runs flow test in dir, offline.
func (o *offline) flowTest(t *testing.T, bin, dir string, args ...string) (string, error) {
	t.Helper()
	out, err := o.command(t, bin, dir, append([]string{"test"}, args...)...).CombinedOutput()
	return string(out), err
}

// TestFlowTestOfflineCutsTheNetwork: what the offline tests run in reaches
// no socket, a listener on this machine's loopback included, while the
// same dial outside it does.
func TestFlowTestOfflineCutsTheNetwork(t *testing.T) {
	o := newOffline(t)
	if o.unshare == nil {
		t.Skip("no network namespace here")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := "echo > /dev/tcp/" + strings.Replace(l.Addr().String(), ":", "/", 1)
	if out, err := exec.Command("bash", "-c", dial).CombinedOutput(); err != nil {
		t.Fatalf("the dial fails outside the namespace too: %v\n%s", err, out)
	}
	c := o.command(t, filepath.Join(o.path, "bash"), t.TempDir(), "-c", dial)
	if out, err := c.CombinedOutput(); err == nil {
		t.Fatalf("a socket reached %s from inside the namespace:\n%s", l.Addr(), out)
	}
}

// TestFlowTestExamplesOffline replays every example's cassette exactly as
// docs/reuse-and-tests.md writes it (flow test examples/NAME.yaml, no
// flag), with the agent CLIs absent from PATH and the network cut
// (offline), in a copy of the examples at another path than the one they
// were recorded at, beside a README.md and a Taskfile.yml that differ from
// the recorded ones and in a repository whose history is not the recorded
// one (what count-file, fanout, nightly and release's commands print), with
// every agent script of the copy replaced by one that says it was started:
// each passes and no driver process starts. Commands are answered from
// the cassette by default, except writers' (reuse: never): its first
// command makes the repository its isolated writers work in, where the
// cassette's recorded changes are made again and landed for real.
func TestFlowTestExamplesOffline(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reuse-and-tests.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := 0
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "flow test ") && !strings.Contains(l, "--record") {
			documented++
			if f := strings.Fields(l); len(f) != 3 || !strings.HasPrefix(f[2], "examples/") {
				t.Errorf("the doc writes %q: flow test of an example is written flow test examples/NAME.yaml, with no flag, and tested so", l)
			}
		}
	}
	if documented == 0 {
		t.Fatal("docs/reuse-and-tests.md writes no flow test command")
	}
	o := newOffline(t)
	clone := filepath.Join(t.TempDir(), "elsewhere", "clone")
	if err := os.MkdirAll(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples"), filepath.Join(clone, "examples")).CombinedOutput(); err != nil {
		t.Fatalf("copying the examples: %v\n%s", err, out)
	}
	// What the examples' commands read, not as it was when recorded.
	for _, f := range []string{"README.md", "Taskfile.yml", "go.mod"} {
		if err := os.WriteFile(filepath.Join(clone, f), []byte("# Not what was recorded\n\nchanged since\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "A history that is not the recorded one"}} {
		if out, err := exec.Command("git", append([]string{"-C", clone}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	started := filepath.Join(t.TempDir(), "started")
	scripts, _ := filepath.Glob(filepath.Join(clone, "examples", "agents", "bin", "*"))
	for _, s := range scripts {
		trap := "#!/bin/sh\necho \"$0\" >> " + started + "\nexit 1\n"
		if err := os.WriteFile(s, []byte(trap), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if len(scripts) < 5 {
		t.Fatalf("only %d agent scripts to replace", len(scripts))
	}
	files, _ := filepath.Glob(filepath.Join(clone, "examples", "*.yaml"))
	bin := flowBinary(t)
	tested := 0
	for _, f := range files {
		name := filepath.Base(f)
		if _, err := os.Stat(strings.TrimSuffix(f, ".yaml") + ".cassette"); err != nil {
			continue
		}
		tested++
		t.Run(name, func(t *testing.T) {
			out, err := o.flowTest(t, bin, clone, "examples/"+name)
			if err != nil || !strings.Contains(out, "passed against") {
				t.Fatalf("flow test examples/%s: %v\n%s", name, err, out)
			}
			if name == "writers.yaml" && !strings.Contains(out, "All 3 notes landed, in order: alpha, beta, gamma.") {
				t.Errorf("the writers' recorded notes did not land:\n%s", out)
			}
		})
	}
	if b, err := os.ReadFile(started); err == nil {
		t.Errorf("flow test started driver processes:\n%s", b)
	}
	if tested < 7 {
		t.Fatalf("only %d examples", tested)
	}
	p := filepath.Join(clone, "examples", "review.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	const old = "Give your verdict."
	if !strings.Contains(string(b), old) {
		t.Fatalf("review.yaml holds no %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, "Give your verdict now.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := o.flowTest(t, bin, clone, "examples/review.yaml")
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("flow test with an edited prompt: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"review#1/verdict does not match the recording: prompt changed at line 1", "--- recorded",
		"\n-Give your verdict. Approve", "\n+Give your verdict now. Approve"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure does not say %q:\n%s", want, out)
		}
	}
	checkTestFailure(t, out)
}

// checkTestFailure: a failed flow test never advises flow resume (it would
// run the agents live), names no failure kind twice, and its diff marks
// only lines that differ: no line is both removed and added.
func checkTestFailure(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, "flow resume") {
		t.Errorf("a failed flow test advises flow resume:\n%s", out)
	}
	if strings.Contains(out, "unavailable: unavailable") {
		t.Errorf("a failure kind is said twice:\n%s", out)
	}
	removed := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
			removed[l[1:]] = true
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") && removed[l[1:]] {
			t.Errorf("the diff marks an identical line as differing: %q\n%s", l[1:], out)
		}
	}
}

// TestFlowTestRunsApart: flow test's runs live in .flow/tests, not among
// the runs: .flow/runs is not made, a bare flow resume finds nothing to
// resume after a failed test, and flow show lists no run.
func TestFlowTestRunsApart(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples"), dir).CombinedOutput(); err != nil {
		t.Fatalf("copying the examples: %v\n%s", err, out)
	}
	p := filepath.Join(dir, "examples", "solve.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "Say whether the answer is right.", "Say now whether the answer is right.", 1)
	if edited == string(b) {
		t.Fatal("solve.yaml holds no prompt")
	}
	if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	flow := func(args ...string) (string, int) {
		c := exec.Command(bin, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "HOME="+t.TempDir(), "FLOW_RUNS_DIR=", "FLOW_TESTS_DIR=")
		out, err := c.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := flow("test", "examples/solve.yaml")
	if code != 1 || !strings.Contains(out, "does not match the recording") {
		t.Fatalf("flow test of an edited flow: exit %d, want 1 and a miss\n%s", code, out)
	}
	checkTestFailure(t, out)
	if !strings.Contains(out, filepath.Join(".flow", "tests")) {
		t.Errorf("the test run is not in .flow/tests:\n%s", out)
	}
	if runs, _ := rundir.List(filepath.Join(dir, ".flow", "runs")); len(runs) != 0 {
		t.Errorf("flow test left %d run(s) in .flow/runs", len(runs))
	}
	if runs, _ := rundir.List(filepath.Join(dir, ".flow", "tests")); len(runs) != 1 {
		t.Errorf(".flow/tests holds %d run(s), want the test's 1", len(runs))
	}
	if out, code := flow("resume"); code == 0 || !strings.Contains(out, "no resumable run") {
		t.Errorf("a bare flow resume after a failed flow test: exit %d\n%s", code, out)
	}
}

// TestReuseDocCommands runs every command line of docs/reuse-and-tests.md's
// sh blocks, in order, as written, from a copy of the repository's
// examples: each must exit 0.
func TestReuseDocCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reuse-and-tests.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, l := range strings.Split(string(doc), "\n") {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in && strings.TrimSpace(l) != "":
			lines = append(lines, l)
		}
	}
	if len(lines) < 8 {
		t.Fatalf("the doc has %d command lines", len(lines))
	}
	dir := t.TempDir()
	for _, f := range []string{"examples", "go.mod", "README.md", "Taskfile.yml"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(root, f), dir).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", f, err, out)
		}
	}
	bin := flowBinary(t)
	runs := t.TempDir()
	for _, l := range lines {
		c := exec.Command("bash", "-c", l)
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "FLOW_RUNS_DIR="+runs, "TMPDIR="+runs)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", l, err, out)
		}
	}
}

// TestRunReuseCLI: flow run --reuse answers every visit of an unedited
// flow from the last run, says what it saved, and flow show marks the
// reused visits (the commands run again); flow plan --reuse names what
// an edit re-runs.
func TestRunReuseCLI(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"examples", "go.mod", "README.md", "Taskfile.yml"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(root, f), dir).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", f, err, out)
		}
	}
	bin := flowBinary(t)
	runs := t.TempDir()
	flow := func(args ...string) string {
		t.Helper()
		out, err := command(bin, dir, runs, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("flow %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	flow("run", "examples/fanout.yaml")
	out := flow("run", "--reuse", "examples/fanout.yaml")
	if !strings.Contains(out, "reused 4 visit(s)") {
		t.Errorf("flow run --reuse did not say it reused the 4 agent visits:\n%s", out)
	}
	if show := flow("show"); strings.Count(show, "↺") != 4 || !strings.Contains(show, "reused from ") {
		t.Errorf("flow show does not mark the 4 reused visits:\n%s", show)
	}
	p := filepath.Join(dir, "examples", "fanout.yaml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "Write a short report", "Write a long report", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := flow("plan", "--reuse", "examples/fanout.yaml")
	if !strings.Contains(plan, "run    report  prompt changed at line 1") || !strings.Contains(plan, "3 of 7 visits reused") {
		t.Errorf("flow plan --reuse:\n%s", plan)
	}
}

// TestReuseWritersLandsAgain: flow run --reuse of writers answers its
// three isolated writers and its reviewer from the last run, though the
// run makes its repository afresh at another temporary path: what each
// writer changed is read from the last run's repository, made again in
// the new one's worktrees and landed on the new run's branch, each note
// in one commit, in item order.
func TestReuseWritersLandsAgain(t *testing.T) {
	runs, flow := examplesCopy(t)
	flow("run", "examples/writers.yaml")
	if out := flow("run", "--reuse", "examples/writers.yaml"); !strings.Contains(out, "reused 4 visit(s)") {
		t.Fatalf("flow run --reuse did not reuse the 3 writers and the reviewer:\n%s", out)
	}
	list, err := rundir.List(runs)
	if err != nil || len(list) != 2 {
		t.Fatalf("runs: %v %v", list, err)
	}
	second := list[0]
	repo := scratchRepo(t, second.Dir)
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	branch := "main..flow/" + second.ID
	if got := git("log", "--first-parent", "--reverse", "--format=%s", branch); got != "flow: land write[1]\nflow: land write[2]\nflow: land write[3]" {
		t.Errorf("what landed on the second run's branch:\n%s", got)
	}
	for _, note := range []string{"alpha", "beta", "gamma"} {
		file := "notes/" + note + ".md"
		if n := len(strings.Fields(git("log", "--no-merges", "--format=%H", branch, "--", file))); n != 1 {
			t.Errorf("%s changed in %d commits, want 1", file, n)
		}
	}
}
