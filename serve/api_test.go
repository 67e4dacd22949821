package serve

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
)

// client calls a test server and decodes JSON answers.
type client struct {
	t     *testing.T
	base  string
	token string
}

func (c *client) do(method, path, body string, hdr ...string) (int, map[string]any, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &m); err != nil {
			c.t.Fatalf("%s %s: not JSON: %v\n%s", method, path, err, raw)
		}
	} else {
		m = map[string]any{"_body": string(raw)}
	}
	return resp.StatusCode, m, resp.Header
}

// waitRun polls a run until its status is want.
func (c *client) waitRun(id, want string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, m, _ := c.do("GET", "/api/runs/"+id, "")
		if m["status"] == want {
			return m
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("run %s is %v, want %s: %v", id, m["status"], want, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func serveHTTP(t *testing.T, files map[string]string, edit func(*Config)) (*booted, *client) {
	t.Helper()
	b := boot(t, files, edit)
	ts := httptest.NewServer(b.Handler())
	t.Cleanup(ts.Close)
	return b, &client{t: t, base: ts.URL}
}

const tickFlow = "name: tick\nschedule: {cron: \"@every 1h\"}\nnodes: [{id: hello, run: [echo, hi]}]\n"

func TestAPIListsFlowsAndRuns(t *testing.T) {
	_, c := serveHTTP(t, map[string]string{"tick.yaml": tickFlow, "broken.yaml": "name: broken\nnodes: [\n"}, nil)
	code, m, _ := c.do("POST", "/api/flows/tick/runs", "")
	if code != http.StatusAccepted || m["id"] == nil {
		t.Fatalf("start: %d %v", code, m)
	}
	id := m["id"].(string)
	c.waitRun(id, "succeeded")

	_, m, _ = c.do("GET", "/api/flows", "")
	fl := m["flows"].([]any)
	if len(fl) != 2 {
		t.Fatalf("flows: %v", fl)
	}
	broken, tick := fl[0].(map[string]any), fl[1].(map[string]any)
	if errs, _ := broken["errors"].([]any); len(errs) == 0 || !strings.Contains(errs[0].(string), "broken.yaml:2") {
		t.Errorf("the broken file should come with its faults: %v", broken)
	}
	if tick["schedule"].(map[string]any)["cron"] != "@every 1h" || tick["last"].(map[string]any)["id"] != id {
		t.Errorf("tick: %v", tick)
	}
	_, m, _ = c.do("GET", "/api/runs?flow=tick&status=succeeded", "")
	if runs := m["runs"].([]any); len(runs) != 1 || runs[0].(map[string]any)["trigger"] != TriggerAPI {
		t.Errorf("runs: %v", m)
	}
	_, m, _ = c.do("GET", "/api/runs/"+id, "")
	if vs := m["visits"].([]any); len(vs) != 1 || vs[0].(map[string]any)["status"] != "ok" {
		t.Errorf("visits: %v", m["visits"])
	}
	_, m, _ = c.do("GET", "/", "")
	page := m["_body"].(string)
	for _, want := range []string{`data-flow="tick"`, `data-broken="`, `data-run="` + id + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

func TestAPIRefusesBadInputWithTheField(t *testing.T) {
	typed := "name: typed\ninput: {goal: string, n: {type: integer, default: 1}}\nnodes: [{id: x, run: [echo, \"${{ input.goal }}\"]}]\n"
	_, c := serveHTTP(t, map[string]string{"typed.yaml": typed, "broken.yaml": "name: broken\nnodes: 3\n"}, nil)
	tests := []struct {
		method, path, body string
		code               int
		field              string
	}{
		{"POST", "/api/flows/nope/runs", "", 404, "name"},
		{"POST", "/api/flows/broken/runs", "", 409, "name"},
		{"POST", "/api/flows/typed/runs", `{"goal": 3}`, 400, "input.goal"},
		{"POST", "/api/flows/typed/runs", `{}`, 400, "input.goal"},
		{"POST", "/api/flows/typed/runs", `{"goal": "g", "n": 1.5}`, 400, "input.n"},
		{"POST", "/api/flows/typed/runs", `not json`, 400, "input"},
		{"POST", "/api/flows/typed/runs", strings.Repeat("x", maxBody+1), 413, "input"},
		{"GET", "/api/runs?status=done", "", 400, "status"},
		{"GET", "/api/runs?limit=0", "", 400, "limit"},
		{"GET", "/api/runs?offset=-1", "", 400, "offset"},
		{"GET", "/api/runs/bad%20id", "", 400, "id"},
		{"GET", "/api/runs/" + url.PathEscape("../x"), "", 400, "id"},
		{"GET", "/api/runs/20990101-000000-abcdef", "", 404, "id"},
		{"POST", "/api/runs/20990101-000000-abcdef/stop", "", 404, "id"},
		{"POST", "/api/runs/20990101-000000-abcdef/asks/x", `{"answer":"y"}`, 404, "id"},
		{"GET", "/api/nothing", "", 404, ""},
	}
	for _, tt := range tests {
		code, m, _ := c.do(tt.method, tt.path, tt.body)
		if code != tt.code || m["field"] != nil && m["field"] != tt.field || tt.field != "" && m["field"] != tt.field || m["error"] == nil {
			t.Errorf("%s %s %.40q: %d %v, want %d naming %q", tt.method, tt.path, tt.body, code, m, tt.code, tt.field)
		}
	}
}

func TestAPIStopAndResume(t *testing.T) {
	b, c := serveHTTP(t, map[string]string{"long.yaml": "name: long\nnodes:\n  - {id: first, run: [echo]}\n  - {id: wait, run: [sleep, \"1\"]}\n  - {id: last, run: [echo]}\n"}, nil)
	_, m, _ := c.do("POST", "/api/flows/long/runs", "")
	id := m["id"].(string)
	deadline := time.Now().Add(5 * time.Second)
	for b.cmds.most() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	code, m, _ := c.do("POST", "/api/runs/"+id+"/stop", "")
	if code != 200 || m["status"] != "stopped" || time.Since(start) > 5*time.Second {
		t.Fatalf("stop: %d %v after %s", code, m, time.Since(start))
	}
	if code, m, _ := c.do("POST", "/api/runs/"+id+"/stop", ""); code != 409 || m["field"] != "id" {
		t.Errorf("stopping a stopped run: %d %v", code, m)
	}
	if code, m, _ := c.do("POST", "/api/runs/"+id+"/resume", ""); code != 202 {
		t.Fatalf("resume: %d %v", code, m)
	}
	c.waitRun(id, "succeeded")
	facts, _ := rundir.ReadJournal(runDirOf(b, id))
	ends := map[string]int{}
	for _, f := range facts {
		if f.Type == record.FactEnd {
			ends[f.Visit]++
		}
	}
	if ends["first"] != 1 || ends["wait"] != 2 || ends["last"] != 1 {
		t.Fatalf("the resume must not run an ended visit again: ends %v", ends)
	}
	if code, m, _ := c.do("POST", "/api/runs/"+id+"/resume", ""); code != 409 || m["field"] != "id" {
		t.Errorf("resuming a run that succeeded: %d %v", code, m)
	}
}

func runDirOf(b *booted, id string) string {
	dir, _ := rundir.Find(b.cfg.RunsDir, id)
	return dir
}

const askFlow = `name: gate
nodes:
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
  - {id: after, run: [echo, "${{ ship.output }}"]}
`

func TestAPIAnswersAnAsk(t *testing.T) {
	b, c := serveHTTP(t, map[string]string{"gate.yaml": askFlow}, nil)
	_, m, _ := c.do("POST", "/api/flows/gate/runs", "")
	id := m["id"].(string)
	var asks []any
	for deadline := time.Now().Add(5 * time.Second); len(asks) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, m, _ = c.do("GET", "/api/asks", "")
		asks = m["asks"].([]any)
	}
	if len(asks) != 1 || asks[0].(map[string]any)["question"] != "Ship it?" || asks[0].(map[string]any)["visit"] != "ship" {
		t.Fatalf("asks: %v", asks)
	}
	for _, bad := range []struct{ body, field string }{{`{"answer": "maybe"}`, "answer"}, {`{"answer": 3}`, "answer"}, {`{"reply": "ship"}`, "reply"}, {`{}`, "answer"}} {
		if code, m, _ := c.do("POST", "/api/runs/"+id+"/asks/ship", bad.body); code != 400 || m["field"] != bad.field {
			t.Errorf("answer %s: %d %v, want 400 naming %s", bad.body, code, m, bad.field)
		}
	}
	if code, m, _ := c.do("POST", "/api/runs/"+id+"/asks/nope", `{"answer": "ship"}`); code != 404 || m["field"] != "visit" {
		t.Errorf("an answer to no question: %d %v", code, m)
	}
	code, m, _ := c.do("POST", "/api/runs/"+id+"/asks/ship", `{"answer": "ship"}`)
	if code != 200 || m["by"] != anonymous {
		t.Fatalf("answer: %d %v", code, m)
	}
	m = c.waitRun(id, "succeeded")
	vs := m["visits"].([]any)
	answer := vs[0].(map[string]any)["answer"].(map[string]any)
	if answer["by"] != anonymous || answer["time"] == nil || vs[1].(map[string]any)["output"].(map[string]any)["report"] != "echo ship" {
		t.Fatalf("the answer should reach the journal and the next node: %v", vs)
	}
	if len(b.asks.list("")) != 0 {
		t.Fatal("the ask should be gone")
	}
}

func TestAPIAskTakesItsDefaultAtTimeout(t *testing.T) {
	flow := strings.Replace(askFlow, "default: hold}", "default: hold, timeout: 300ms}", 1)
	_, c := serveHTTP(t, map[string]string{"gate.yaml": flow}, nil)
	_, m, _ := c.do("POST", "/api/flows/gate/runs", "")
	m = c.waitRun(m["id"].(string), "succeeded")
	vs := m["visits"].([]any)
	if a := vs[0].(map[string]any)["answer"].(map[string]any); a["default"] != true || vs[0].(map[string]any)["output"] != "hold" {
		t.Fatalf("an unanswered ask takes its default at its timeout: %v", vs[0])
	}
}

func TestTokens(t *testing.T) {
	b, c := serveHTTP(t, map[string]string{"gate.yaml": askFlow}, func(cfg *Config) {
		cfg.Tokens = []Token{{Name: "alice", Secret: "alice-secret-0123456789"}, {Name: "bob", Secret: "bob-secret-0123456789ab"}}
	})
	for _, path := range []string{"/api/flows", "/api/runs", "/metrics", "/events"} {
		code, m, h := c.do("GET", path, "")
		if code != 401 || m["field"] != "Authorization" || h.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without a token: %d %v", path, code, m)
		}
	}
	if code, _, h := c.do("GET", "/", ""); code != 303 || h.Get("Location") != "/login" {
		t.Errorf("the page without a token should send to /login: %d", code)
	}
	c.token = "alice-secret-012345678X"
	if code, _, _ := c.do("GET", "/api/flows", ""); code != 401 {
		t.Errorf("a wrong token: %d", code)
	}
	c.token = "bob-secret-0123456789ab"
	_, m, _ := c.do("POST", "/api/flows/gate/runs", "")
	id := m["id"].(string)
	for deadline := time.Now().Add(5 * time.Second); len(b.asks.list(id)) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if code, m, _ := c.do("POST", "/api/runs/"+id+"/asks/ship", `{"answer":"ship"}`); code != 200 || m["by"] != "bob" {
		t.Fatalf("the answer should be bob's: %d %v", code, m)
	}
	// The page logs in with a form and keeps the token in a cookie.
	c.token = ""
	code, _, h := c.do("POST", "/login", "token=alice-secret-0123456789", "Content-Type", "application/x-www-form-urlencoded")
	cookie := h.Get("Set-Cookie")
	if code != 303 || !strings.Contains(cookie, tokenCookie+"=") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("login: %d %q", code, cookie)
	}
	if code, _, _ := c.do("GET", "/api/flows", "", "Cookie", strings.Split(cookie, ";")[0]); code != 200 {
		t.Errorf("the cookie should let the page in: %d", code)
	}
}

func TestCrossSitePostsAreRefused(t *testing.T) {
	_, c := serveHTTP(t, map[string]string{"tick.yaml": tickFlow}, nil)
	code, m, _ := c.do("POST", "/api/flows/tick/runs", "", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if code != 403 || m["field"] != "Origin" {
		t.Fatalf("a cross-site POST: %d %v", code, m)
	}
	if code, _, _ := c.do("POST", "/api/flows/tick/runs", "", "Sec-Fetch-Site", "same-origin"); code != 202 {
		t.Fatalf("a same-origin POST: %d", code)
	}
}

func TestMetricsCountRuns(t *testing.T) {
	_, c := serveHTTP(t, map[string]string{"tick.yaml": tickFlow}, nil)
	for range 3 {
		_, m, _ := c.do("POST", "/api/flows/tick/runs", "")
		c.waitRun(m["id"].(string), "succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, m, _ := c.do("GET", "/metrics", "")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(m["_body"].(string)))
		if err != nil {
			t.Fatalf("/metrics is not Prometheus text: %v", err)
		}
		got := -1.0
		for _, mt := range fams["flow_runs_total"].GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["flow"] == "tick" && labels["status"] == "succeeded" {
				got = mt.GetCounter().GetValue()
			}
		}
		if got == 3 {
			for _, name := range []string{"flow_visits_total", "flow_queue_length", "flow_runs_running"} {
				if fams[name] == nil {
					t.Errorf("/metrics lacks %s", name)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("flow_runs_total{flow=tick,status=succeeded} = %v, want 3", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNonLoopbackNeedsTokens(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:80"} {
		if _, err := New(Config{Dir: dir, Addr: addr}); err == nil || !strings.Contains(err.Error(), "--token-file") {
			t.Errorf("%s without tokens: %v", addr, err)
		}
	}
	if _, err := New(Config{Dir: dir, Addr: "0.0.0.0:8080", Tokens: []Token{{Name: "a", Secret: "0123456789abcdef"}}}); err != nil {
		t.Errorf("with tokens: %v", err)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:8080"} {
		if _, err := New(Config{Dir: dir, Addr: addr}); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// TestPageFormAnswersANestedAsk posts the page's own form for an ask whose
// visit path has # and /, as a browser without JavaScript would.
func TestPageFormAnswersANestedAsk(t *testing.T) {
	flow := `name: loopy
nodes:
  - id: gate
    loop: {until: "ship.output == 'ship'", max: 2}
    do:
      - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
`
	b, c := serveHTTP(t, map[string]string{"loopy.yaml": flow}, nil)
	_, m, _ := c.do("POST", "/api/flows/loopy/runs", "")
	id := m["id"].(string)
	for deadline := time.Now().Add(5 * time.Second); len(b.asks.list(id)) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	_, m, _ = c.do("GET", "/", "")
	action := regexp.MustCompile(`action="(/runs/[^"]+/asks/[^"]+)"`).FindStringSubmatch(m["_body"].(string))
	if action == nil || action[1] != "/runs/"+id+"/asks/gate%231%2fship" && action[1] != "/runs/"+id+"/asks/gate%231%2Fship" {
		t.Fatalf("the page's form action: %v", action)
	}
	code, _, h := c.do("POST", action[1], "answer=ship&back=/runs/"+id, "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin")
	if code != http.StatusSeeOther || h.Get("Location") != "/runs/"+id {
		t.Fatalf("the form post: %d to %q", code, h.Get("Location"))
	}
	c.waitRun(id, "succeeded")
}

// An event stream outlives the server's ReadTimeout: the deadline bounds
// reading a request, not listening to one (issue 23).
func TestEventStreamOutlivesReadTimeout(t *testing.T) {
	dir := t.TempDir()
	flowDir := filepath.Join(dir, "flows")
	if err := os.MkdirAll(flowDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Dir: flowDir, WorkDir: dir, RunsDir: filepath.Join(dir, "runs"), Log: discard, Listener: ln,
		ReadTimeout: 200 * time.Millisecond, Load: flows.Options{UserAgentDirs: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = s.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	<-s.Ready()
	resp, err := http.Get("http://" + s.Addr() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(time.Second) // five ReadTimeouts
	s.changed("")
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var all []byte
		for !strings.Contains(string(all), "data:") {
			n, err := resp.Body.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- string(all)
	}()
	select {
	case out := <-got:
		if !strings.Contains(out, "data:") {
			t.Fatalf("the stream ended after the read timeout: %q", out)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no event on the stream after the read timeout")
	}
}
