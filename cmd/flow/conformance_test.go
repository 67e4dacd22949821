package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// The entry-point matrix (docs/architecture.md, "runner is the composition
// root"): every way a run starts × every concern a run gets from the
// runner. A cell is "" when the concern holds for runs of that entry point
// (and is checked), else the reason it does not apply. A new entry point
// is a row here and in entryPoints; a new concern is a column here and in
// concerns: a missing cell fails TestEveryEntryPointGetsEveryConcern.
var matrix = map[string]map[string]string{
	"run": {"configured secret": "", "environment secret": "", "traces": "", "preflight": "", "reuse": "", "budgets": "", "delegation": "", "rate limiting": ""},
	"resume": {"configured secret": "", "environment secret": "", "traces": "", "preflight": "", "budgets": "", "delegation": "", "rate limiting": "",
		"reuse": "a resume answers from its own journal; it takes no --reuse"},
	"sweep cell": {"configured secret": "", "environment secret": "", "traces": "", "preflight": "", "budgets": "", "delegation": "", "rate limiting": "",
		"reuse": "flow sweep takes no --reuse: repeats are distinct samples (docs/reuse-and-tests.md)"},
	"served run": {"configured secret": "", "environment secret": "", "traces": "", "preflight": "", "budgets": "", "delegation": "", "rate limiting": "",
		"reuse": "flow serve takes no --reuse"},
	"test": {"configured secret": "", "environment secret": "", "traces": "", "reuse": "", "budgets": "", "delegation": "", "rate limiting": "",
		"preflight": "flow test answers every turn from its cassette, offline: no driver is reached"},
	"fork": {"configured secret": "", "environment secret": "", "traces": "", "preflight": "", "budgets": "", "delegation": "", "rate limiting": "",
		"reuse": "a fork answers what its fork point does not reach from its origin; it takes no --reuse (docs/fork-and-diff.md)"},
	"temporal worker": {"configured secret": "", "environment secret": "", "traces": "", "budgets": "", "rate limiting": "", "delegation": "",
		"preflight": "the visits run on workers, which check nothing before a run they cannot see",
		"reuse":     "refused on Temporal: workers cannot read this machine's recordings (docs/decisions.md)"},
}

const (
	confKey = "cfg-conformance-credential-0123456789" // named only by drivers.openai.api_key_env
	envKey  = "env-conformance-credential-9876543210" // in a variable named like a secret
)

// confFlow prints both secrets from an agent and a command, after a gate
// that, when CONFORMANCE_STOP names a file not there yet, makes it and
// waits to be stopped (for a resume).
const confFlow = `name: f
agents:
  - {name: printer, description: prints, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "printed $FLOW_CONFORMANCE_LOGIN $MY_SERVICE_TOKEN"']}
nodes:
  - {id: gate, run: 'if [ -n "$CONFORMANCE_STOP" ] && [ ! -e "$CONFORMANCE_STOP" ]; then touch "$CONFORMANCE_STOP"; sleep 60; fi'}
  - {id: print, agent: printer, prompt: x}
  - {id: shell, run: 'echo "shell $FLOW_CONFORMANCE_LOGIN $MY_SERVICE_TOKEN"'}
`

// confPreflightFlow's agent needs a key variable that is unset when it runs.
const confPreflightFlow = `name: p
agents:
  - {name: remote, description: asks a server, driver: openai, model: m, base_url: %s/v1, api_key_env: CONFORMANCE_ABSENT_KEY}
nodes:
  - {id: gate, run: 'if [ -n "$CONFORMANCE_STOP" ] && [ ! -e "$CONFORMANCE_STOP" ]; then touch "$CONFORMANCE_STOP"; sleep 60; fi'}
  - {id: ask, agent: remote, prompt: hi}
`

// confBudgetFlow's second turn has nothing left of a budget the first
// overspent (the model server bills every turn).
const confBudgetFlow = `name: b
budget: {tokens: 1}
agents:
  - {name: remote, description: asks a server, driver: openai, model: m, base_url: %s/v1, api_key_env: MY_SERVICE_TOKEN}
nodes:
  - {id: gate, run: 'if [ -n "$CONFORMANCE_STOP" ] && [ ! -e "$CONFORMANCE_STOP" ]; then touch "$CONFORMANCE_STOP"; sleep 60; fi'}
  - {id: first, agent: remote, prompt: one}
  - {id: second, agent: remote, prompt: two}
`

// confDelegateFlow's lead sends a scout with flow delegate (flow is on PATH).
const confDelegateFlow = `name: d
agents:
  - {name: lead, description: sends a scout, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "lead heard: $(flow delegate scout "look at A")"']}
  - {name: scout, description: looks, driver: exec, command: [sh, -c, 'cat >/dev/null; echo scouted-it']}
nodes:
  - {id: gate, run: 'if [ -n "$CONFORMANCE_STOP" ] && [ ! -e "$CONFORMANCE_STOP" ]; then touch "$CONFORMANCE_STOP"; sleep 60; fi'}
  - {id: lead, agent: lead, prompt: go, delegate: {agents: [scout]}}
`

// confLimitedFlow sends two turns to a provider that takes one request in
// two seconds.
const confLimitedFlow = `name: r
agents:
  - {name: remote, description: asks a server, driver: openai, model: m, base_url: %s/v1, api_key_env: MY_SERVICE_TOKEN}
nodes:
  - {id: gate, run: 'if [ -n "$CONFORMANCE_STOP" ] && [ ! -e "$CONFORMANCE_STOP" ]; then touch "$CONFORMANCE_STOP"; sleep 60; fi'}
  - {id: first, agent: remote, prompt: one}
  - {id: second, agent: remote, prompt: two}
  - {id: third, agent: remote, prompt: three}
`

type conformance struct {
	t, parent *testing.T
	bin       string
	spans     atomic.Int64 // OTLP trace exports received
	model     string       // the model server's URL
	server    *devserver.Server
}

// entryPoint starts a run of flow (a file of dir) as a user would, with
// env and flags added, and returns what it printed (a server: its log)
// and its exit code (a served run that did not start: 2).
type entryPoint func(c *conformance, dir, flow string, env []string, flags ...string) (string, int)

var entryPoints = map[string]entryPoint{
	"run": func(c *conformance, dir, flow string, env []string, flags ...string) (string, int) {
		return c.flow(dir, env, append(append([]string{"run"}, flags...), flow)...)
	},
	"resume": func(c *conformance, dir, flow string, env []string, _ ...string) (string, int) {
		c.stoppedRun(dir, flow)
		return c.flow(dir, env, "resume")
	},
	"sweep cell": func(c *conformance, dir, flow string, env []string, _ ...string) (string, int) {
		return c.flow(dir, env, "sweep", flow, "--model", "m1")
	},
	"served run": func(c *conformance, dir, flow string, env []string, _ ...string) (string, int) {
		return c.served(dir, flow, env)
	},
	"test": func(c *conformance, dir, flow string, env []string, _ ...string) (string, int) {
		if out, code := c.flow(dir, env, "test", "--record", flow); code != 0 {
			return out, code
		}
		if err := os.RemoveAll(filepath.Join(dir, ".flow", "tests")); err != nil { // the recording's run
			c.t.Fatal(err)
		}
		return c.flow(dir, env, "test", flow)
	},
	"fork": func(c *conformance, dir, flow string, env []string, _ ...string) (string, int) {
		c.stoppedRun(dir, flow)
		return c.flow(dir, env, "fork", "last", "--at", "gate")
	},
	"temporal worker": func(c *conformance, dir, flow string, env []string, _ ...string) (string, int) {
		clitest.Tool(c.t, "temporal") // skips only this cell when it is missing
		if c.server == nil {
			c.server = devserver.Start(c.parent)
		}
		queue := "conformance-" + filepath.Base(dir)
		startWorkerEnv(c.t, c.bin, dir, c.server.Address, queue, env, "--runs-dir", filepath.Join(dir, ".flow", "worker"))
		return c.flow(dir, append(env, "FLOW_TEMPORAL_HEARTBEAT=2s"), "run", "--temporal", c.server.Address, "--task-queue", queue, flow)
	},
}

// concerns check one concern of runs started by an entry point.
var concerns = map[string]func(c *conformance, start entryPoint){
	"configured secret":  func(c *conformance, start entryPoint) { c.secretNowhere(start, confKey) },
	"environment secret": func(c *conformance, start entryPoint) { c.secretNowhere(start, envKey) },
	"traces": func(c *conformance, start entryPoint) {
		before := c.spans.Load()
		dir := c.dir("f.yaml", confFlow)
		if out, code := start(c, dir, "f.yaml", nil); code != 0 {
			c.t.Fatalf("exit %d\n%s", code, out)
		}
		deadline := time.Now().Add(10 * time.Second)
		for c.spans.Load() == before && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if c.spans.Load() == before {
			c.t.Error("no trace reached the collector")
		}
	},
	"preflight": func(c *conformance, start entryPoint) {
		dir := c.dir("p.yaml", fmt.Sprintf(confPreflightFlow, c.model))
		out, code := start(c, dir, "p.yaml", []string{"CONFORMANCE_ABSENT_KEY="})
		if code != exitInvalid || !strings.Contains(out, "CONFORMANCE_ABSENT_KEY") {
			c.t.Fatalf("exit %d, want 2 naming the unset key variable:\n%s", code, out)
		}
		for _, r := range c.runs(dir) {
			facts, _ := rundir.ReadJournal(r)
			for _, f := range facts {
				if f.Type == record.FactStart && f.Visit == "ask" {
					c.t.Errorf("the agent started in %s after a failed preflight", r)
				}
			}
		}
	},
	"budgets": func(c *conformance, start entryPoint) {
		dir := c.dir("b.yaml", fmt.Sprintf(confBudgetFlow, c.model))
		out, code := start(c, dir, "b.yaml", nil)
		if code == exitInvalid || code == exitOK && !strings.Contains(out, "overspent") {
			c.t.Fatalf("exit %d, want the budget to end the run\n%s", code, out)
		}
		if !c.anyFileSays(dir, "journal.jsonl", `"budget"`) {
			c.t.Errorf("no journal records a budget failure or overspend:\n%s", out)
		}
	},
	"delegation": func(c *conformance, start entryPoint) {
		dir := c.dir("d.yaml", confDelegateFlow)
		out, code := start(c, dir, "d.yaml", []string{"PATH=" + filepath.Dir(c.bin) + string(os.PathListSeparator) + os.Getenv("PATH")})
		if code != 0 {
			c.t.Fatalf("exit %d\n%s", code, out)
		}
		if !c.anyFileSays(dir, "journal.jsonl", "lead heard: scouted-it") {
			c.t.Errorf("the lead did not hear its scout:\n%s", out)
		}
	},
	"rate limiting": func(c *conformance, start entryPoint) {
		srv := modelserver.Start(c.t)
		srv.SetLimit(modelserver.Limit{Requests: 1, Window: 2 * time.Second})
		dir := c.dir("r.yaml", fmt.Sprintf(confLimitedFlow, srv.URL()))
		out, code := start(c, dir, "r.yaml", nil)
		if code != 0 {
			c.t.Fatalf("exit %d, want the run to wait for its provider's limit and succeed\n%s", code, out)
		}
		refused := 0
		for _, e := range srv.LimitLog() {
			if e.Refused {
				refused++
			}
		}
		if refused > 1 {
			c.t.Errorf("the provider refused %d requests: the run's drivers do not pace to its limit", refused)
		}
	},
	"reuse": func(c *conformance, start entryPoint) {
		dir := c.dir("f.yaml", confFlow)
		if out, code := c.flow(dir, nil, "run", "f.yaml"); code != 0 { // the recording
			c.t.Fatalf("exit %d\n%s", code, out)
		}
		out, code := start(c, dir, "f.yaml", nil, "--reuse")
		if code != 0 {
			c.t.Fatalf("exit %d\n%s", code, out)
		}
		runs := c.runs(dir)
		facts, err := rundir.ReadJournal(runs[0]) // the newest
		if err != nil {
			c.t.Fatal(err)
		}
		if rundir.Saved(facts).Visits == 0 {
			c.t.Errorf("the run %s reused no visit:\n%s", runs[0], out)
		}
	},
}

// TestEveryEntryPointGetsEveryConcern: each cell of the matrix that
// applies is checked through the real binary; a cell missing fails.
func TestEveryEntryPointGetsEveryConcern(t *testing.T) {
	c := &conformance{parent: t, bin: flowBinary(t)}
	collector := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			c.spans.Add(1)
		}
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg conc.WaitGroup
	wg.Go(func() { _ = collector.Serve(ln) })
	t.Cleanup(func() { _ = collector.Close(); wg.Wait() })
	c.model = modelserver.Start(t).URL()
	t.Setenv("FLOW_CONFORMANCE_LOGIN", confKey)
	t.Setenv("MY_SERVICE_TOKEN", envKey)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("FLOW_DRIVER", "exec")
	t.Setenv("HOME", t.TempDir()) // no user configuration

	for _, e := range slices.Sorted(maps.Keys(entryPoints)) {
		for _, k := range slices.Sorted(maps.Keys(concerns)) {
			why, ok := matrix[e][k]
			if !ok {
				t.Errorf("the matrix has no cell for %s × %s: say whether the runs %s starts get it", e, k, e)
				continue
			}
			if why != "" {
				continue
			}
			t.Run(e+"/"+k, func(t *testing.T) {
				c.t = t
				concerns[k](c, entryPoints[e])
			})
		}
	}
	for e, row := range matrix {
		if entryPoints[e] == nil {
			t.Errorf("the matrix has a row %q that no entry point runs", e)
		}
		for k := range row {
			if concerns[k] == nil {
				t.Errorf("the matrix has a column %q that no concern checks", k)
			}
		}
	}
}

// dir is a fresh directory with the configuration that names the
// configured key, and the flow src as file (and as flows/file, for flow
// serve).
func (c *conformance) dir(file, src string) string {
	dir := c.t.TempDir()
	for name, body := range map[string]string{
		".flow/config.yaml": "drivers:\n  openai:\n    api_key_env: FLOW_CONFORMANCE_LOGIN\n",
		file:                src,
		"flows/" + file:     src,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	return dir
}

// flow runs the flow command in dir with env added.
func (c *conformance) flow(dir string, env []string, args ...string) (string, int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		c.t.Fatal(err)
	}
	return string(out), 0
}

// runs are the run directories under dir, newest first.
func (c *conformance) runs(dir string) []string {
	var out []string
	for _, d := range []string{"tests", "runs"} { // flow test's runs are in .flow/tests, and newer than the recording's
		infos, _ := rundir.List(filepath.Join(dir, ".flow", d))
		for _, r := range infos {
			out = append(out, r.Dir)
		}
	}
	return out
}

// stoppedRun leaves a resumable run of flow in dir: it starts, and is
// stopped (Ctrl-C) once its gate waits. The key variable is set for it;
// it sends no trace.
func (c *conformance) stoppedRun(dir, flow string) {
	c.t.Helper()
	stop := filepath.Join(dir, "stopped")
	cmd := exec.Command(c.bin, "run", flow)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CONFORMANCE_STOP="+stop, "CONFORMANCE_ABSENT_KEY=sk-set-for-the-first-part-only",
		"OTEL_SDK_DISABLED=true") // the resume's trace is the one looked for
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			c.t.Fatalf("the run never reached its gate:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		c.t.Fatalf("the stopped run: %v, want exit 130\n%s", err, out.String())
	}
}

// served starts flow serve in dir, starts one run of flow through its API
// and returns the server's log once the run ended (0: succeeded, 1:
// failed) or did not start (2).
func (c *conformance) served(dir, flow string, env []string) (string, int) {
	c.t.Helper()
	log := &syncBuffer{}
	cmd := exec.Command(c.bin, "serve", "flows", "--addr", "127.0.0.1:0", "--poll", "100ms")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(os.Environ(), env...), log
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	s := &served{t: c.t, cmd: cmd, stderr: log}
	name := strings.TrimSuffix(flow, filepath.Ext(flow))
	await(c.t, 15*time.Second, "flow serve to serve", func() bool {
		m := servingRE.FindStringSubmatch(log.String())
		if m != nil {
			s.url = m[1]
		}
		return m != nil
	})
	if code, m := s.call("POST", "/api/flows/"+name+"/runs", ""); code != http.StatusAccepted {
		c.t.Fatalf("POST /api/flows/%s/runs: %d %v\n%s", name, code, m, log.String())
	}
	code := -1
	await(c.t, 60*time.Second, "the served run to end", func() bool {
		if strings.Contains(log.String(), "did not start") {
			code = exitInvalid
			return true
		}
		for _, r := range c.runs(dir) {
			info, err := rundir.Inspect(r)
			if err == nil && info.Status != record.StatusRunning {
				code = exitFailed
				if info.Status == record.StatusSucceeded {
					code = exitOK
				}
				return true
			}
		}
		return false
	})
	return log.String(), code
}

// anyFileSays reports whether a file named name under dir holds text.
func (c *conformance) anyFileSays(dir, name, text string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			b, _ := os.ReadFile(path)
			found = found || bytes.Contains(b, []byte(text))
		}
		return nil
	})
	return found
}

// secretNowhere: a run of the flow that prints key, started by start,
// writes it into no file of its directory (its runs, sweeps, cassette,
// worker's homes) and shows it in no output, and says [redacted] instead.
func (c *conformance) secretNowhere(start entryPoint, key string) {
	dir := c.dir("f.yaml", confFlow)
	out, code := start(c, dir, "f.yaml", nil)
	if code != 0 {
		c.t.Fatalf("exit %d\n%s", code, out)
	}
	if strings.Contains(out, key) {
		c.t.Errorf("the output shows the key:\n%s", out)
	}
	redacted := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(key)) {
			c.t.Errorf("the key is written in clear in %s", path)
		}
		if bytes.Contains(b, []byte("[redacted]")) {
			redacted++
		}
		return nil
	})
	if redacted == 0 {
		c.t.Errorf("no file says [redacted]: the key never reached the run")
	}
}
