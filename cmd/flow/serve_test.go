package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// syncBuffer is a bytes.Buffer safe to write from a process's pipe while a
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is a `flow serve` process under test.
type served struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan error
}

var servingRE = regexp.MustCompile(`msg=serving url=(http://\S+)`)

// writeFlows writes files (name -> content) into dir/flows.
func writeFlows(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "flows"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, "flows", name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// startServe starts `flow serve flows` in dir on a random loopback port
// (unless args give --addr) and waits until it serves.
func startServe(t *testing.T, bin, dir string, args ...string) *served {
	t.Helper()
	return startServeEnv(t, bin, dir, nil, args...)
}

// startServeEnv is startServe with env added to the server's environment.
func startServeEnv(t *testing.T, bin, dir string, env []string, args ...string) *served {
	t.Helper()
	if !strings.Contains(strings.Join(args, " "), "--addr") {
		args = append(args, "--addr", "127.0.0.1:0")
	}
	s := &served{t: t, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"serve", "flows"}, args...)...)
	s.cmd.Dir = dir
	if env != nil {
		s.cmd.Env = append(os.Environ(), env...)
	}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg conc.WaitGroup
	wg.Go(func() { s.exited <- s.cmd.Wait() })
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		wg.Wait()
	})
	deadline := time.After(15 * time.Second)
	for {
		if m := servingRE.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = strings.Replace(m[1], "http://[::]", "http://127.0.0.1", 1)
			s.url = strings.Replace(s.url, "http://0.0.0.0", "http://127.0.0.1", 1)
			return s
		}
		select {
		case err := <-s.exited:
			s.exited <- err
			t.Fatalf("flow serve exited: %v\n%s", err, s.stderr.String())
		case <-deadline:
			t.Fatalf("flow serve did not start:\n%s", s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sigterm ends the server and holds it to exit 0 within 5 s.
func (s *served) sigterm() time.Duration {
	s.t.Helper()
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		s.exited <- err
		if err != nil {
			s.t.Fatalf("flow serve after SIGTERM: %v\n%s", err, s.stderr.String())
		}
	case <-time.After(5 * time.Second):
		s.t.Fatalf("flow serve still runs 5 s after SIGTERM\n%s", s.stderr.String())
	}
	return time.Since(start)
}

// call makes a request and decodes a JSON answer (or keeps the text).
func (s *served) call(method, path, body string, hdr ...string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	m := map[string]any{"_body": string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &m); err != nil {
			s.t.Fatalf("%s %s: %v\n%s", method, path, err, raw)
		}
	}
	return resp.StatusCode, m
}

// await polls until cond holds, at most d.
func await(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func runStatus(s *served, id string) string {
	_, m := s.call("GET", "/api/runs/"+id, "")
	st, _ := m["status"].(string)
	return st
}

// TestServeFiresSchedules is the first acceptance line: `@every 2s` fires at
// least 3 times in 7.5 s, a broken file beside it is reported by name and
// does not stop the server; `overlap: skip` with a 1 s schedule and a 3 s run
// never has two runs at once and records its skips; the runs are ordinary
// run directories (`flow runs` lists them) and /metrics counts them.
func TestServeFiresSchedules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{
		"tick.yaml":   "name: tick\nschedule: {cron: \"@every 2s\"}\nnodes: [{id: hello, run: [echo, tick]}]\n",
		"slow.yaml":   "name: slow\nschedule: {cron: \"@every 1s\", overlap: skip}\nnodes: [{id: work, run: [sleep, \"3\"]}]\n",
		"broken.yaml": "name: broken\nnodes: [\n",
	})
	bin := flowBinary(t)
	s := startServe(t, bin, dir)
	time.Sleep(7500 * time.Millisecond)

	_, m := s.call("GET", "/api/runs?flow=tick", "")
	if n := m["total"].(float64); n < 3 {
		t.Errorf("@every 2s made %v runs in 7.5 s, want at least 3", n)
	}
	if !strings.Contains(s.stderr.String(), "broken.yaml") {
		t.Errorf("the log does not name the broken file:\n%s", s.stderr.String())
	}
	_, m = s.call("GET", "/", "")
	for _, want := range []string{`data-flow="tick"`, `data-broken="flows/broken.yaml"`, `data-fire="skip"`} {
		if !strings.Contains(m["_body"].(string), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if code, m := s.call("POST", "/api/flows/tick/runs", ""); code != http.StatusAccepted {
		t.Errorf("POST /api/flows/tick/runs: %d %v", code, m)
	}
	s.sigterm()

	// overlap: skip: the runs of slow never overlap, and skips are recorded.
	type span struct{ from, to time.Time }
	var spans []span
	runs, _ := rundir.List(filepath.Join(dir, ".flow", "runs"))
	for _, r := range runs {
		if r.Flow == "slow" {
			spans = append(spans, span{r.Started, r.Ended})
		}
	}
	if len(spans) < 2 {
		t.Fatalf("slow ran %d times, want at least 2", len(spans))
	}
	for i := 1; i < len(spans); i++ { // newest first
		if spans[i].to.IsZero() || spans[i].to.After(spans[i-1].from) {
			t.Errorf("two runs of slow overlap: %v and %v", spans[i], spans[i-1])
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "flows", ".flow", "serve.jsonl"))
	if n := strings.Count(string(log), `"type":"skip","flow":"slow"`); n < 2 {
		t.Errorf("serve.jsonl records %d skips of slow, want at least 2:\n%s", n, log)
	}
	cmd := exec.Command(bin, "runs")
	cmd.Dir = dir
	if out, err := cmd.Output(); err != nil || strings.Count(string(out), "tick") < 3 {
		t.Errorf("flow runs should list the served runs: %v\n%s", err, out)
	}
}

// TestServeMetricsCountRuns: /metrics parses as Prometheus text and counts
// the runs the API shows.
func TestServeMetricsCountRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": "name: tick\nnodes: [{id: hello, run: [echo, tick]}]\n"})
	s := startServe(t, flowBinary(t), dir)
	for range 3 {
		_, m := s.call("POST", "/api/flows/tick/runs", "")
		id := m["id"].(string)
		await(t, 10*time.Second, "the run to succeed", func() bool { return runStatus(s, id) == "succeeded" })
	}
	await(t, 5*time.Second, "the metrics to count 3 runs", func() bool {
		_, m := s.call("GET", "/metrics", "")
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(m["_body"].(string)))
		if err != nil {
			t.Fatalf("/metrics is not Prometheus text: %v", err)
		}
		for _, mt := range fams["flow_runs_total"].GetMetric() {
			if len(mt.GetLabel()) == 2 && mt.GetLabel()[0].GetValue() == "tick" && mt.GetLabel()[1].GetValue() == "succeeded" {
				return mt.GetCounter().GetValue() == 3
			}
		}
		return false
	})
	s.sigterm()
}

// TestServeStopResumeAndShutdown: a run stopped through the API ends
// `stopped` within 5 s and a resume finishes it without running ended
// visits again; a second server on the directory refuses with the first's
// pid and address; SIGTERM ends the server within 5 s with no process left,
// and the next server resumes the run it interrupted.
func TestServeStopResumeAndShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{
		"long.yaml": "name: long\nnodes:\n  - {id: first, run: [echo, one]}\n  - {id: wait, run: [sleep, \"2\"]}\n  - {id: last, run: [echo, two]}\n",
		// Unusual sleep lengths mark this test's processes.
		"hang.yaml": "name: hang\nnodes:\n  - {id: first, run: [echo, one]}\n  - {id: wait, run: \"sleep 4545.1 & sleep 4545.2\"}\n",
	})
	bin := flowBinary(t)
	s := startServe(t, bin, dir)

	_, m := s.call("POST", "/api/flows/long/runs", "")
	id := m["id"].(string)
	await(t, 10*time.Second, "the wait visit to start", func() bool {
		_, m := s.call("GET", "/api/runs/"+id, "")
		live, _ := m["live"].([]any)
		return len(live) == 1 && live[0].(map[string]any)["visit"] == "wait"
	})
	start := time.Now()
	code, m := s.call("POST", "/api/runs/"+id+"/stop", "")
	if code != 200 || m["status"] != "stopped" || time.Since(start) > 5*time.Second {
		t.Fatalf("stop: %d %v after %s", code, m, time.Since(start))
	}
	if code, m := s.call("POST", "/api/runs/"+id+"/resume", ""); code != http.StatusAccepted {
		t.Fatalf("resume: %d %v", code, m)
	}
	await(t, 10*time.Second, "the resumed run to succeed", func() bool { return runStatus(s, id) == "succeeded" })
	facts, _ := rundir.ReadJournal(filepath.Join(dir, ".flow", "runs", id))
	ends := map[string]int{}
	for _, f := range facts {
		if f.Type == record.FactEnd {
			ends[f.Visit]++
		}
	}
	if ends["first"] != 1 || ends["last"] != 1 {
		t.Fatalf("the resume ran an ended visit again: %v", ends)
	}

	second := exec.Command(bin, "serve", "flows", "--addr", "127.0.0.1:0")
	second.Dir = dir
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	pid := s.cmd.Process.Pid
	if !errors.As(err, &exit) || !strings.Contains(string(out), "pid "+strconv.Itoa(pid)) || !strings.Contains(string(out), strings.TrimPrefix(s.url, "http://")) {
		t.Fatalf("a second server should refuse, naming pid %d and %s: %v\n%s", pid, s.url, err, out)
	}

	_, m = s.call("POST", "/api/flows/hang/runs", "")
	hang := m["id"].(string)
	await(t, 10*time.Second, "the hanging commands", func() bool { return len(marked("4545.")) >= 2 })
	took := s.sigterm()
	t.Logf("SIGTERM to exit: %s", took)
	if left := gone(marked, "4545."); len(left) > 0 {
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("processes left after SIGTERM: %v", left)
	}
	info, err := rundir.Inspect(filepath.Join(dir, ".flow", "runs", hang))
	if err != nil || info.Status != record.StatusStopped || !info.Resumable {
		t.Fatalf("the interrupted run should be stopped and resumable: %v %+v", err, info)
	}

	next := startServe(t, bin, dir)
	await(t, 10*time.Second, "the next server to resume the run", func() bool { return len(marked("4545.")) >= 2 })
	if runStatus(next, hang) != "running" || !strings.Contains(next.stderr.String(), "resuming") {
		t.Fatalf("the next server should resume %s:\n%s", hang, next.stderr.String())
	}
	next.sigterm()
	if left := gone(marked, "4545."); len(left) > 0 {
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("processes left after the second SIGTERM: %v", left)
	}
	facts, _ = rundir.ReadJournal(filepath.Join(dir, ".flow", "runs", hang))
	firsts := 0
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "first" {
			firsts++
		}
	}
	if firsts != 1 {
		t.Fatalf("the resumed run ran its ended visit again (%d ends)", firsts)
	}
}

// TestServeOffLoopbackNeedsTokens: 0.0.0.0 without --token-file refuses to
// start; with it, a request without the token gets 401 and one with it 200.
func TestServeOffLoopbackNeedsTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": "name: tick\nnodes: [{id: hello, run: [echo, tick]}]\n"})
	bin := flowBinary(t)
	cmd := exec.Command(bin, "serve", "flows", "--addr", "0.0.0.0:0")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "--token-file") {
		t.Fatalf("0.0.0.0 without tokens should refuse (exit 2): %v\n%s", err, out)
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# who token\nops 0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, bin, dir, "--addr", "0.0.0.0:0", "--token-file", tokens)
	if code, _ := s.call("GET", "/api/flows", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := s.call("GET", "/api/flows", "", "Authorization", "Bearer 0123456789abcdef0123"); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", code)
	}
	s.sigterm()
}

// gone waits up to a second for the processes marked with marker, sent
// SIGTERM as their server ended, to finish exiting; it returns those left.
func gone(marked func(string) []int, marker string) []int {
	deadline := time.Now().Add(time.Second)
	for len(marked(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return marked(marker)
}
