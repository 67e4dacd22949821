package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/clitest"
)

// The docs' shell examples are this test's fixtures: every line of every
// ```sh block of README.md, docs/serve.md, docs/temporal.md and
// docs/tracing.md is run literally, in the order the page gives it, with
// only these changes:
// `go run ./cmd/flow` is the flow under test (put on PATH as `flow`), and
// the documented ports and addresses are free ones of 127.0.0.1. Each
// line's documented answer is checked. A line added to those pages
// without a fixture here fails the test, as does a fixture whose line the
// page no longer has.

// docStep is the fixture of one documented line: how to check it, or why
// it is not run.
type docStep struct {
	line string
	skip string
	run  func(d *docSession, line string)
}

// docSession is one page's lines run in order: where, with what
// environment, and the processes (servers, workers) they left running.
type docSession struct {
	t     *testing.T
	dir   string
	env   []string
	subst []string // old, new pairs applied to each line
	vars  map[string]string
	bg    map[string]*docProc
}

type docProc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

var (
	shellBlockRE = regexp.MustCompile("(?s)```(?:sh|bash|shell)\n(.*?)```")
	docCommentRE = regexp.MustCompile(`(^|\s+)#\s.*$|^#.*$`)
)

// docLines is every command line of a page's shell blocks, comments and
// blank lines dropped.
func docLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range shellBlockRE.FindAllStringSubmatch(string(b), -1) {
		for l := range strings.SplitSeq(m[1], "\n") {
			if l = strings.TrimSpace(docCommentRE.ReplaceAllString(l, "")); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

func (d *docSession) expand(line string) string {
	line = strings.NewReplacer(d.subst...).Replace(line)
	return line
}

// command makes the bash process of a documented line, in its own
// process group so that ending it ends what it started.
func (d *docSession) command(ctx context.Context, line string) *exec.Cmd {
	c := exec.CommandContext(ctx, "bash", "-c", d.expand(line))
	c.Dir = d.dir
	c.Env = slices.Clone(d.env)
	for k, v := range d.vars {
		c.Env = append(c.Env, k+"="+v)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	return c
}

// sh runs a documented line to its end and returns its output; a non-zero
// exit fails the test.
func (d *docSession) sh(line string, timeout time.Duration) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := d.command(ctx, line).CombinedOutput()
	if err != nil {
		d.t.Fatalf("%s\n(run as %s): %v\n%s", line, d.expand(line), err, out)
	}
	return string(out)
}

// start runs a documented line in the background until the session ends.
func (d *docSession) start(line string) *docProc {
	d.t.Helper()
	p := &docProc{out: &syncBuffer{}}
	p.cmd = d.command(context.Background(), line)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	d.t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if d.t.Failed() {
			d.t.Logf("%s:\n%s", line, p.out.String())
		}
	})
	d.bg[line] = p
	return p
}

// waitFor polls until ok holds or the time is up.
func (d *docSession) waitFor(what string, timeout time.Duration, ok func() bool) {
	d.t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.t.Fatalf("%s: not within %s", what, timeout)
		}
	}
}

func jsonOf(t *testing.T, line, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s: the answer is not JSON: %v\n%s", line, err, out)
	}
	return m
}

// docPlayground is a directory as a reader's checkout has it for the
// examples: examples/ and the files fanout counts by default.
func docPlayground(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"README.md", "go.mod", "Taskfile.yml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// freePort is a port free on 127.0.0.1 now, with port+1000 free too (the
// Temporal dev server's UI takes it).
func freePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if p+1000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1000)); err == nil {
			_ = l2.Close()
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

func TestDocsRunAsWritten(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	pages := []struct {
		file  string
		steps func(d *docSession) []docStep
		setup func(t *testing.T, d *docSession)
	}{
		{"README.md", readmeSteps, func(t *testing.T, d *docSession) {
			gobin := t.TempDir()
			// Once installed, `flow` is the installed one.
			d.env = append(d.env, "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			d.vars["ROOT"] = root
		}},
		{"docs/serve.md", serveSteps, func(t *testing.T, d *docSession) {
			d.subst = append(d.subst, "localhost:8080", "127.0.0.1:"+strconv.Itoa(freePort(t)))
		}},
		{"docs/temporal.md", temporalSteps, func(t *testing.T, d *docSession) {
			temporal := clitest.Tool(t, "temporal")
			port := strconv.Itoa(freePort(t))
			addr := "127.0.0.1:" + port
			d.subst = append(d.subst, "127.0.0.1:7233", addr, "10.0.0.5:7233", addr, "--port 7233", "--port "+port)
			d.env = append(d.env, "PATH="+filepath.Dir(temporal)+string(os.PathListSeparator)+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
				"FLOW_TEMPORAL_HEARTBEAT=2s")
		}},
		{"docs/tracing.md", tracingSteps, tracingSetup},
		{"docs/fork-and-diff.md", forkDiffSteps, func(*testing.T, *docSession) {}},
		{"docs/waits.md", waitsSteps, waitsSetup},
	}
	for _, p := range pages {
		t.Run(p.file, func(t *testing.T) {
			d := &docSession{t: t, dir: docPlayground(t, root), vars: map[string]string{}, bg: map[string]*docProc{},
				env:   append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+t.TempDir()),
				subst: []string{"go run ./cmd/flow", "flow"}}
			p.setup(t, d)
			steps := p.steps(d)
			lines := docLines(t, filepath.Join(root, p.file))
			var want []string
			for _, s := range steps {
				want = append(want, s.line)
			}
			if !slices.Equal(lines, want) {
				t.Fatalf("%s's shell lines are not this test's fixtures: give each line a fixture here.\nthe page: %q\nthe fixtures: %q", p.file, lines, want)
			}
			for i, s := range steps {
				if s.skip != "" {
					t.Logf("%s:%d not run: %s: %s", p.file, i+1, s.line, s.skip)
					continue
				}
				s.run(d, s.line)
			}
		})
	}
}

func readmeSteps(d *docSession) []docStep {
	t := d.t
	return []docStep{
		{line: "go run ./cmd/flow run examples/fanout.yaml", run: func(d *docSession, line string) {
			if out := d.sh(line, 2*time.Minute); !strings.Contains(out, "succeeded") {
				t.Fatalf("%s did not say it succeeded:\n%s", line, out)
			}
		}},
		{line: "go -C tools tool task test", skip: "it is the suite this test is part of (.ci/run runs it)"},
		{line: "go install ./cmd/flow", run: func(d *docSession, line string) {
			// Installed from the checkout, as a reader does it.
			dir := d.dir
			d.dir = d.vars["ROOT"]
			d.sh(line, 5*time.Minute)
			d.dir = dir
		}},
		{line: "flow --version", run: func(d *docSession, line string) {
			if out := d.sh(line, time.Minute); !strings.HasPrefix(out, "flow ") {
				t.Fatalf("%s: %q", line, out)
			}
		}},
	}
}

func serveSteps(d *docSession) []docStep {
	t := d.t
	const events = "curl -s -N localhost:8080/api/runs/$RUN/events"
	return []docStep{
		{line: "go run ./cmd/flow serve examples/", run: func(d *docSession, line string) {
			p := d.start(line + " --addr " + d.expand("localhost:8080"))
			d.waitFor("flow serve to listen", 30*time.Second, func() bool { return strings.Contains(p.out.String(), "msg=serving") })
		}},
		{line: "curl -s localhost:8080/api/flows", run: func(d *docSession, line string) {
			m := jsonOf(t, line, d.sh(line, 10*time.Second))
			flows, _ := m["flows"].([]any)
			var names []string
			for _, f := range flows {
				f, _ := f.(map[string]any)
				names = append(names, f["name"].(string))
				if f["name"] == "release" {
					if s, _ := f["schedule"].(map[string]any); s["cron"] != "0 9 * * 1-5" || s["tz"] != "Europe/Paris" {
						t.Errorf("release's schedule: %v", s)
					}
				}
			}
			if !slices.Contains(names, "release") || !slices.Contains(names, "fanout") {
				t.Fatalf("%s: flows %v", line, names)
			}
		}},
		{line: `curl -s -X POST localhost:8080/api/flows/release/runs -d '{"since": "2 days ago"}'`, run: func(d *docSession, line string) {
			m := jsonOf(t, line, d.sh(line, 10*time.Second))
			id, _ := m["id"].(string)
			if id == "" || (m["status"] != "running" && m["status"] != "queued") || m["url"] != "/api/runs/"+id {
				t.Fatalf("%s: %v", line, m)
			}
			d.vars["RUN"] = id
		}},
		{line: "curl -s localhost:8080/api/asks", run: func(d *docSession, line string) {
			var ask map[string]any
			d.waitFor("the release run to ask", 60*time.Second, func() bool {
				asks, _ := jsonOf(t, line, d.sh(line, 10*time.Second))["asks"].([]any)
				if len(asks) > 0 {
					ask, _ = asks[0].(map[string]any)
				}
				return ask != nil
			})
			if ask["run"] != d.vars["RUN"] || ask["visit"] != "approve" || ask["question"] != "Publish these release notes?" {
				t.Fatalf("%s: %v", line, ask)
			}
		}},
		{line: `curl -s -X POST localhost:8080/api/runs/$RUN/asks/approve -d '{"answer": "publish"}'`, run: func(d *docSession, line string) {
			// The next line watches the run's events: started now, while
			// the run waits, it sees the answer's consequences.
			ev := d.start(events)
			d.waitFor("the event stream to open", 10*time.Second, func() bool { return strings.Contains(ev.out.String(), "retry:") })
			m := jsonOf(t, line, d.sh(line, 10*time.Second))
			if m["run"] != d.vars["RUN"] || m["visit"] != "approve" || m["answer"] != "publish" || m["by"] != "local" {
				t.Fatalf("%s: %v", line, m)
			}
		}},
		{line: events, run: func(d *docSession, line string) {
			ev := d.bg[line]
			d.waitFor("the run's end on its event stream", 30*time.Second, func() bool {
				return strings.Contains(ev.out.String(), `"run.end"`)
			})
			var visits []string
			sc := bufio.NewScanner(strings.NewReader(ev.out.String()))
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var e map[string]any
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					t.Fatalf("%s: an event is not JSON: %v: %s", line, err, data)
				}
				if e["type"] == "visit.end" {
					visits = append(visits, e["visit"].(string))
				}
			}
			if !slices.Contains(visits, "approve") || !slices.Contains(visits, "outcome/publish") {
				t.Fatalf("%s: the answered run's visits %v, want approve and outcome/publish\n%s", line, visits, ev.out.String())
			}
		}},
	}
}

func temporalSteps(d *docSession) []docStep {
	t := d.t
	var runID string
	return []docStep{
		{line: "temporal server start-dev --ip 127.0.0.1 --port 7233 --dynamic-config-value system.enableActivityEagerExecution=true --dynamic-config-value history.transferProcessorMaxPollRPS=1000", run: func(d *docSession, line string) {
			d.start(line) // its UI takes the port + 1000, which freePort left free
			addr := d.expand("127.0.0.1:7233")
			d.waitFor("the Temporal dev server to listen", 60*time.Second, func() bool {
				c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
				if err == nil {
					_ = c.Close()
				}
				return err == nil
			})
		}},
		{line: "flow worker --temporal 127.0.0.1:7233", run: func(d *docSession, line string) {
			p := d.start(line)
			d.waitFor("the worker to start", 30*time.Second, func() bool { return strings.Contains(p.out.String(), "worker") })
		}},
		{line: "flow run --temporal 127.0.0.1:7233 examples/fanout.yaml", run: func(d *docSession, line string) {
			out := d.sh(line, 3*time.Minute)
			m := regexp.MustCompile(`run (\S+) succeeded`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("%s did not say it succeeded:\n%s", line, out)
			}
			runID = m[1]
		}},
		{line: "flow show", run: func(d *docSession, line string) {
			out := d.sh(line, time.Minute)
			if !strings.Contains(out, runID) || !strings.Contains(out, "succeeded") || !strings.Contains(out, "counts[2]") {
				t.Fatalf("%s: not the run %s:\n%s", line, runID, out)
			}
		}},
		{line: "flow sweep --temporal 127.0.0.1:7233 examples/solve.yaml --concurrency 9", run: func(d *docSession, line string) {
			if out := d.sh(line, 5*time.Minute); !strings.Contains(out, "chosen: medium") {
				t.Fatalf("%s: no choice of medium:\n%s", line, out)
			}
		}},
		{line: "flow worker --temporal 10.0.0.5:7233 --concurrency 4", run: func(d *docSession, line string) {
			p := d.start(line)
			d.waitFor("the second worker to start", 30*time.Second, func() bool { return strings.Contains(p.out.String(), "worker") })
		}},
		{line: "flow sweep --temporal 10.0.0.5:7233 review.yaml --model sonnet,haiku --repeat 5 --concurrency 8",
			skip: "review.yaml, sonnet and haiku stand for the reader's own flow and models; the sweep line above runs the example's"},
	}
}

func forkDiffSteps(d *docSession) []docStep {
	t := d.t
	ran := func(d *docSession, line string) {
		if out := d.sh(line, 2*time.Minute); !strings.Contains(out, "succeeded") {
			t.Fatalf("%s did not say it succeeded:\n%s", line, out)
		}
	}
	return []docStep{
		{line: "go run ./cmd/flow run examples/count-file.yaml -i file=go.mod", run: ran},
		{line: "go run ./cmd/flow run examples/count-file.yaml -i file=Taskfile.yml", run: ran},
		{line: "go run ./cmd/flow diff last~1 last", run: func(d *docSession, line string) {
			out := d.sh(line, time.Minute)
			for _, want := range []string{"~ wc  output", "~ summary  ", "go.mod", "Taskfile.yml", "total"} {
				if !strings.Contains(out, want) {
					t.Fatalf("%s: no %q in\n%s", line, want, out)
				}
			}
		}},
		{line: "go run ./cmd/flow diff last~1 last --json", run: func(d *docSession, line string) {
			m := jsonOf(t, line, d.sh(line, time.Minute))
			if m["differed"] != float64(2) || m["same"] != float64(0) {
				t.Fatalf("%s: %v", line, m)
			}
		}},
		{line: "go run ./cmd/flow fork last --at summary --assign summarizer=bigger", run: ran},
		{line: "go run ./cmd/flow runs --forks-of last~1", run: func(d *docSession, line string) {
			if out := d.sh(line, time.Minute); strings.Count(out, "count-file") != 1 {
				t.Fatalf("%s: want the one fork:\n%s", line, out)
			}
		}},
		{line: "go run ./cmd/flow diff last~1 last", run: func(d *docSession, line string) {
			out := d.sh(line, time.Minute)
			if !strings.Contains(out, "~ summary  model") || strings.Contains(out, "~ wc") || !strings.Contains(out, "model: (none) → bigger") {
				t.Fatalf("%s: the fork should differ in its summary's model only:\n%s", line, out)
			}
		}},
	}
}
