package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// hostileHeader is a rate-limit header form a model server may send, and
// what flow does with it.
type hostileHeader struct {
	name   string
	status int      // the server's answer: 200, or 429 for a refusal
	kv     []string // the headers
	// waits: the header asks for a wait longer than the turn has left, so
	// the run fails rate_limit at once, naming the header (said).
	// Otherwise the header says nothing flow can use: with a 200 the run
	// succeeds, with a 429 it fails rate_limit after the limiter's own
	// backoff.
	waits bool
	said  string
}

// hostileHeaders are 22 forms: huge, negative, NaN, +Inf, dates past 2262
// and in 9999, durations too long to hold, token and request resets,
// retry-after-ms, and Anthropic's anthropic-ratelimit-*-reset forms.
var hostileHeaders = []hostileHeader{
	{"openai request reset in 9999", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "9999-12-31T00:00:00Z"}, true, "x-ratelimit-reset-requests: 9999-12-31T00:00:00Z"},
	{"request reset past 2262", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2263-01-01T00:00:00Z"}, true, "x-ratelimit-reset-requests"},
	{"request reset of 8760h", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "8760h"}, true, "x-ratelimit-reset-requests: 8760h"},
	{"request reset too long for a duration", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "99999999999999999h"}, true, "x-ratelimit-reset-requests"},
	{"request reset of 1e300 s", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1e300"}, true, "x-ratelimit-reset-requests: 1e300"},
	{"request reset +Inf", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "+Inf"}, true, "x-ratelimit-reset-requests: +Inf"},
	{"negative remaining, reset in 9999", 200, []string{"x-ratelimit-remaining-requests", "-5", "x-ratelimit-reset-requests", "9999-12-31T00:00:00Z"}, true, "x-ratelimit-reset-requests"},
	{"token reset of 8760h", 200, []string{"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "8760h"}, true, "x-ratelimit-reset-tokens: 8760h"},
	{"anthropic request reset in 9999", 200, []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "9999-12-31T23:59:59Z"}, true, "anthropic-ratelimit-requests-reset"},
	{"anthropic token reset in 2099", 200, []string{"anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "2099-01-01T00:00:00Z"}, true, "anthropic-ratelimit-tokens-reset"},
	{"anthropic input-token reset in 9999", 200, []string{"anthropic-ratelimit-input-tokens-remaining", "0", "anthropic-ratelimit-input-tokens-reset", "9999-12-31T23:59:59Z"}, true, "anthropic-ratelimit-input-tokens-reset"},
	{"request reset NaN", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "NaN"}, false, ""},
	{"request reset in the past", 200, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-5s"}, false, ""},
	{"remaining past int64", 200, []string{"x-ratelimit-remaining-requests", "99999999999999999999999", "x-ratelimit-reset-requests", "9999-12-31T00:00:00Z"}, false, ""},
	{"Retry-After 999999999", 429, []string{"Retry-After", "999999999"}, true, "Retry-After: 999999999"},
	{"retry-after-ms 9e12", 429, []string{"retry-after-ms", "9e12"}, true, "retry-after-ms: 9e12"},
	{"Retry-After a date in 2099", 429, []string{"Retry-After", "Thu, 01 Jan 2099 00:00:00 GMT"}, true, "Retry-After: Thu, 01 Jan 2099"},
	{"Retry-After +Inf", 429, []string{"Retry-After", "+Inf"}, true, "Retry-After: +Inf"},
	{"Retry-After 1e309", 429, []string{"Retry-After", "1e309"}, true, "Retry-After"},
	{"Retry-After NaN", 429, []string{"Retry-After", "NaN"}, false, ""},
	{"Retry-After negative", 429, []string{"Retry-After", "-9223372036854775808"}, false, ""},
	{"retry-after-ms negative huge", 429, []string{"retry-after-ms", "-1e308"}, false, ""},
}

// Every hostile header form ends the run within its turn timeout (5 s,
// with room for a loaded machine) with a bounded events file, through the
// real binary and the openai driver against the model server: a wait
// longer than the turn has left fails the turn rate_limit at once, naming
// the header as the server sent it; a figure flow cannot use is ignored.
// On the old code the 9999 reset spun writing hundreds of MB of events and
// the long waits sat out the timeout, recorded `timeout`.
func TestHostileRateLimitHeaders(t *testing.T) {
	t.Parallel()
	const flow = `name: f
timeout: 5s
agents: [./agents]
nodes:
  - {id: t1, agent: helper, prompt: one}
  - {id: t2, agent: helper, prompt: two}
`
	for _, c := range hostileHeaders {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t, modelserver.Reply{Text: "ok", Status: c.status})
			h := http.Header{}
			for i := 0; i+1 < len(c.kv); i += 2 {
				h.Set(c.kv[i], c.kv[i+1])
			}
			s.SetHeader(h)
			start := time.Now()
			run, out, err := runFlowResult(t, driverByName(t, "openai"), s, flow)
			took := time.Since(start)
			if took > 60*time.Second {
				t.Errorf("the run took %v with turns bounded by 5 s", took)
			}
			st, serr := os.Stat(filepath.Join(run, "events.jsonl"))
			if serr != nil || st.Size() >= 1<<20 {
				t.Fatalf("events.jsonl: %v, %v bytes; want under 1 MB", serr, st.Size())
			}
			info, ierr := rundir.Inspect(run)
			if ierr != nil {
				t.Fatal(ierr)
			}
			if c.status == 200 && !c.waits {
				if err != nil {
					t.Fatalf("a header flow cannot use failed the run: %v\n%s", err, out)
				}
				return
			}
			if err == nil || info.Failure == nil {
				t.Fatalf("the run succeeded; want it failed rate_limit\n%s", out)
			}
			root := info.Failure.Root()
			kind, msg := string(root.Kind), root.Message
			t.Logf("%v, %d-byte events: %s: %s", took.Round(time.Millisecond), st.Size(), kind, msg)
			switch {
			case c.waits && (kind != "rate_limit" || !strings.Contains(msg, c.said) || !strings.Contains(msg, "longer than")):
				t.Errorf("failure %s: %q; want rate_limit naming %q and the time left", kind, msg, c.said)
			case c.waits && took > 30*time.Second:
				t.Errorf("failing at once took %v", took)
			case !c.waits && kind != "rate_limit" && kind != "timeout":
				// The limiter's own backoff: rate_limit, or the turn's
				// timeout when a last retry was still in flight.
				t.Errorf("failure %s: %q; want rate_limit", kind, msg)
			}
		})
	}
}

// ratelimit.max_wait that is not a positive duration is exit 2, naming the
// key and how to fix it.
func TestRateLimitMaxWaitIsChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte("name: f\nnodes:\n  - {id: a, run: \"true\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"soon", "-1m", "0s"} {
		cmd := exec.Command(flowBinary(t), "validate", "f.yaml")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "FLOW_RATELIMIT_MAX_WAIT="+v)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "ratelimit.max_wait is \""+v+"\"") {
			t.Errorf("max_wait %q: %v\n%s", v, err, out)
		}
	}
	cmd := exec.Command(flowBinary(t), "validate", "f.yaml")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "FLOW_RATELIMIT_MAX_WAIT=2m")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("max_wait 2m: %v\n%s", err, out)
	}
}
