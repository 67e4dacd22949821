package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// fakeDriver answers turns with a script keyed by visit path.
type fakeDriver struct {
	answer  func(t *Turn) (string, error)
	delay   time.Duration
	live    atomic.Int32
	maxLive atomic.Int32
	mu      sync.Mutex
	turns   []*Turn
}

func (d *fakeDriver) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	n := d.live.Add(1)
	defer d.live.Add(-1)
	for {
		m := d.maxLive.Load()
		if n <= m || d.maxLive.CompareAndSwap(m, n) {
			break
		}
	}
	d.mu.Lock()
	d.turns = append(d.turns, t)
	d.mu.Unlock()
	if d.delay > 0 {
		select {
		case <-ctx.Done():
			return &TurnResult{Status: Aborted}, ctx.Err()
		case <-time.After(d.delay):
		}
	}
	out := "ok " + t.Visit
	var err error
	if d.answer != nil {
		out, err = d.answer(t)
	}
	in := int64(10)
	if err != nil {
		return &TurnResult{Status: Failed, Diagnostics: []string{err.Error()}, Usage: record.Usage{Input: &in}}, nil
	}
	return &TurnResult{Status: Completed, Output: out, Usage: record.Usage{Input: &in}, Session: "s-" + t.Agent.Name}, nil
}

type fakeCommands struct{}

func (fakeCommands) Run(ctx context.Context, c *Command) (*CommandResult, error) {
	if len(c.Argv) > 0 && c.Argv[0] == "fail" {
		return &CommandResult{Passed: false, Exit: 1, Report: "red"}, nil
	}
	return &CommandResult{Passed: true, Exit: 0, Report: strings.Join(c.Argv, " ") + c.Script}, nil
}

const agents = `agents:
  - {name: worker, description: does work, driver: exec, command: [x]}
  - {name: judge, description: judges, driver: exec, command: [x]}
`

func load(t *testing.T, name, src string) *flows.Plan {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	return p
}

func execute(t *testing.T, p *flows.Plan, d *fakeDriver, opts Options) (*Result, []*record.Fact) {
	t.Helper()
	return executeOn(t, hosts[0], p, d, opts)
}

func ended(facts []*record.Fact) []string {
	var out []string
	for _, f := range facts {
		if f.Type == "end" {
			out = append(out, f.Visit)
		}
	}
	return out
}

func TestMapConcurrencyIsBoundedAndReached(t *testing.T) {
	p := load(t, "fan", `name: fan
input: {files: [string]}
`+agents+`nodes:
  - id: look
    map: input.files
    max: 9
    concurrency: 3
    do:
      - {id: each, agent: worker, prompt: "look at ${{ item }}"}
`)
	d := &fakeDriver{delay: 500 * time.Millisecond}
	files := []any{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	res, facts := execute(t, p, d, Options{Input: map[string]any{"files": files}})
	if !res.OK {
		t.Fatalf("run failed: %v", res.Failure)
	}
	if got := d.maxLive.Load(); got != 3 {
		t.Fatalf("max live turns = %d, want exactly 3", got)
	}
	visits := ended(facts)
	for i := 1; i <= 9; i++ {
		want := fmt.Sprintf("look[%d]/each", i)
		if !slices.Contains(visits, want) {
			t.Errorf("journal lacks %s; has %v", want, visits)
		}
	}
	out := res.Output.([]any)
	if len(out) != 9 || out[8].(map[string]any)["item"] != "i" {
		t.Fatalf("map output out of order: %v", out)
	}
}

func TestLoopStopsWhenGuardHolds(t *testing.T) {
	p := load(t, "rev", `name: rev
`+agents+`nodes:
  - id: review
    loop: {until: check.output.approved, max: 3}
    do:
      - {id: code, agent: worker, memory: review, reads: [review.previous.check], prompt: fix it}
      - id: check
        agent: judge
        output: {approved: boolean}
        prompt: approve?
  - id: report
    choice:
      - when: review.output.converged && review.output.iterations == 2
        do: [{id: two, agent: worker, prompt: "converged after ${{ review.output.iterations }}"}]
      - else: [{id: other, agent: worker, prompt: other}]
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{answer: func(t *Turn) (string, error) {
			if t.Agent.Name == "judge" {
				return fmt.Sprintf(`{"approved": %v}`, strings.HasPrefix(t.Visit, "review#2")), nil
			}
			return "done", nil
		}}
		res, facts := executeOn(t, h, p, d, Options{})
		if !res.OK {
			t.Fatalf("run failed: %v", res.Failure)
		}
		visits := ended(facts)
		for _, want := range []string{"review#1/check", "review#2/check", "report/two"} {
			if !slices.Contains(visits, want) {
				t.Errorf("journal lacks %s; has %v", want, visits)
			}
		}
		if slices.Contains(visits, "review#3/code") {
			t.Error("the loop ran a third iteration after its guard held")
		}
		// memory: the second coder turn continues the first one's session, and
		// sees the previous verdict.
		var coder []*Turn
		for _, tn := range d.turns {
			if tn.Agent.Name == "worker" && strings.HasSuffix(tn.Visit, "/code") {
				coder = append(coder, tn)
			}
		}
		if len(coder) != 2 || coder[0].Session != "" || coder[1].Session != "s-worker" {
			t.Fatalf("memory scope not continued: %+v", coder)
		}
		if !strings.Contains(coder[1].Prompt, `"approved": false`) || !strings.Contains(coder[0].Prompt, "first iteration") {
			t.Errorf("previous verdict not read:\n%s", coder[1].Prompt)
		}
	})
}

// A loop of leaves keeps its maps from one iteration to the next: each
// iteration must still see the one just before it, and the loop's output
// the last.
func TestLoopPreviousOverManyIterations(t *testing.T) {
	p := load(t, "count", `name: count
`+agents+`nodes:
  - id: again
    loop:
      # previous must still be the iteration before when the guard reads it
      until: again.iteration >= 5 || (again.previous.step != nil && again.previous.step.output == step.output)
      max: 5
    do:
      - {id: step, agent: worker, prompt: "at ${{ again.iteration }} after ${{ again.previous.step?.output }}"}
      - {id: echo, agent: worker, reads: [again.previous.echo], prompt: "echo ${{ step.output }}"}
  - {id: after, agent: worker, prompt: "ended with ${{ again.output.last.step.output }} and ${{ again.output.last.echo.output }}"}
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{answer: func(t *Turn) (string, error) {
			return "answer to " + strings.SplitN(t.Prompt, "\n", 2)[0], nil
		}}
		res, _ := executeOn(t, h, p, d, Options{})
		if !res.OK {
			t.Fatalf("run failed: %v", res.Failure)
		}
		prompts := map[string]string{}
		for _, tn := range d.turns {
			prompts[tn.Visit] = strings.SplitN(tn.Prompt, "\n\nWorking directory", 2)[0]
		}
		for i := 2; i <= 5; i++ {
			want := fmt.Sprintf("at %d after answer to at %d after ", i, i-1)
			if got := prompts[fmt.Sprintf("again#%d/step", i)]; !strings.HasPrefix(got, want) {
				t.Errorf("iteration %d: prompt %q, want it to start %q", i, got, want)
			}
			want = fmt.Sprintf("## again.previous.echo\nanswer to echo answer to at %d after", i-1)
			if got := prompts[fmt.Sprintf("again#%d/echo", i)]; !strings.Contains(got, want) {
				t.Errorf("iteration %d: echo prompt %q lacks %q", i, got, want)
			}
		}
		if got, want := prompts["after"], "ended with answer to at 5 after"; !strings.HasPrefix(got, want) {
			t.Errorf("after the loop: prompt %q, want it to start %q", got, want)
		}
		if got := prompts["after"]; !strings.Contains(got, " and answer to echo answer to at 5 after") {
			t.Errorf("after the loop: prompt %q lacks the last echo", got)
		}
	})
}

func TestLoopUnconverged(t *testing.T) {
	p := load(t, "rev", `name: rev
`+agents+`nodes:
  - id: review
    loop: {until: "check.output == 'yes'", max: 2}
    do:
      - {id: check, agent: judge, prompt: approve?}
`)
	onHosts(t, func(t *testing.T, h host) {
		res, _ := executeOn(t, h, p, &fakeDriver{}, Options{})
		if res.OK || res.Failure.Kind != schema.FailUnconverged {
			t.Fatalf("want unconverged, got %+v", res.Failure)
		}
	})
}

func TestMapTooManyRunsNothing(t *testing.T) {
	p := load(t, "fan", `name: fan
`+agents+`nodes:
  - id: look
    map: "[1, 2, 3]"
    max: 2
    do: [{id: each, agent: worker, prompt: x}]
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{}
		res, _ := executeOn(t, h, p, d, Options{})
		if res.OK || res.Failure.Kind != schema.FailTooMany || len(d.turns) != 0 {
			t.Fatalf("want too-many with no turn, got %+v after %d turns", res.Failure, len(d.turns))
		}
	})
}

func TestParallelFailFastCancelsSiblings(t *testing.T) {
	p := load(t, "par", `name: par
`+agents+`nodes:
  - id: checks
    fail_fast: true
    parallel:
      slow: [{id: s, agent: worker, prompt: slow}]
      bad: [{id: b, agent: judge, prompt: bad}]
`)
	d := &fakeDriver{answer: func(t *Turn) (string, error) {
		if t.Agent.Name == "judge" {
			return "", errors.New("model said no")
		}
		return "late", nil
	}}
	d.delay = 0
	slow := &slowDriver{inner: d}
	cfg := local.Config{Drivers: map[string]Driver{"exec": slow}, RunsDir: t.TempDir()}
	// In a synctest bubble the clock moves only when every goroutine of the
	// run waits: the slow sibling's 10 s pass at once unless fail_fast
	// cancels it, whatever the machine's load.
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var err error
		res, err = local.Execute(context.Background(), p, cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took >= 10*time.Second {
			t.Fatalf("fail_fast did not cancel the slow sibling: the run took %v of the bubble's clock", took)
		}
	})
	if res.OK || res.Failure.Root().Kind != schema.FailProvider || res.Failure.Root().Visit != "checks/bad/b" {
		t.Fatalf("want provider at checks/bad/b, got %+v", res.Failure.Root())
	}
	facts, _ := rundir.ReadJournal(res.Dir)
	for _, f := range facts {
		if f.Type == "end" && f.Visit == "checks/slow/s" && (f.Error == nil || f.Error.Kind != schema.FailCancelled) {
			t.Fatalf("slow sibling should end cancelled: %+v", f.Error)
		}
	}
}

type slowDriver struct{ inner *fakeDriver }

func (s *slowDriver) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	if t.Agent.Name == "worker" {
		select {
		case <-ctx.Done():
			return &TurnResult{Status: Aborted}, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	return s.inner.Turn(ctx, t)
}

func TestOnFailContinueAndRetry(t *testing.T) {
	p := load(t, "cont", `name: cont
`+agents+`nodes:
  - {id: flaky, agent: judge, prompt: x, retry: 2}
  - {id: broken, agent: worker, prompt: x, on_fail: continue}
  - id: after
    choice:
      - when: "!broken.ok && broken.error.kind == 'provider' && flaky.ok"
        do: [{id: tests, run: [go, test]}]
`)
	onHosts(t, func(t *testing.T, h host) {
		var calls atomic.Int32
		d := &fakeDriver{answer: func(t *Turn) (string, error) {
			if t.Agent.Name == "judge" && calls.Add(1) < 3 {
				return "", errors.New("overloaded")
			}
			if t.Agent.Name == "worker" {
				return "", errors.New("broken")
			}
			return "fine", nil
		}}
		res, facts := executeOn(t, h, p, d, Options{})
		if !res.OK {
			t.Fatalf("run failed: %v", res.Failure)
		}
		if calls.Load() != 3 {
			t.Fatalf("retry: %d attempts, want 3", calls.Load())
		}
		if !slices.Contains(ended(facts), "after/tests") {
			t.Fatal("the choice did not see the failure as a value")
		}
	})
}

func TestTypedOutputSentBackOnceThenSchema(t *testing.T) {
	p := load(t, "typed", `name: typed
`+agents+`nodes:
  - {id: v, agent: judge, prompt: x, output: {approved: boolean}}
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{answer: func(t *Turn) (string, error) { return "I approve!", nil }}
		res, _ := executeOn(t, h, p, d, Options{})
		if res.OK || res.Failure.Kind != schema.FailSchema || len(d.turns) != 2 {
			t.Fatalf("want schema after 2 turns, got %+v after %d", res.Failure, len(d.turns))
		}
		if !strings.Contains(d.turns[1].Prompt, "did not fit") {
			t.Fatalf("the second turn does not say why: %s", d.turns[1].Prompt)
		}
	})
}

func TestTimeoutAndConditionKinds(t *testing.T) {
	p := load(t, "to", `name: to
timeout: 50ms
`+agents+`nodes:
  - {id: slow, agent: worker, prompt: x, on_fail: continue}
  - id: pick
    choice:
      - when: "slow.output == 'x'"
        do: [{id: never, agent: worker, prompt: x}]
`)
	d := &fakeDriver{delay: 2 * time.Second}
	res, facts := execute(t, p, d, Options{})
	var slowFail *record.Failure
	for _, f := range facts {
		if f.Type == "end" && f.Visit == "slow" {
			slowFail = f.Error
		}
	}
	if slowFail == nil || slowFail.Kind != schema.FailTimeout {
		t.Fatalf("want timeout, got %+v", slowFail)
	}
	// slow.output is nil, not a string: the guard cannot be evaluated, so
	// the choice fails `condition` rather than reading as false.
	if res.OK || res.Failure.Kind != schema.FailCondition || res.Failure.Visit != "pick" {
		t.Fatalf("want condition at pick, got %+v", res.Failure)
	}
}

func TestStoppedWhenInterrupted(t *testing.T) {
	p := load(t, "stop", `name: stop
`+agents+`nodes:
  - {id: a, agent: worker, prompt: x}
  - {id: b, agent: worker, prompt: x}
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{delay: 10 * time.Second}
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(100*time.Millisecond, func() { cancel(ErrStopped) })
		res, _, err := h.walk(ctx, t, p, local.Config{Drivers: map[string]Driver{"exec": d}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status() != "stopped" || res.Failure.Visit != "a" {
			t.Fatalf("want stopped at a, got %s %+v", res.Status(), res.Failure)
		}
	})
}

func TestInputDefaultsAndErrors(t *testing.T) {
	p := load(t, "in", `name: in
input:
  goal: string
  level: {type: integer, default: 2}
`+agents+`nodes:
  - {id: a, agent: worker, prompt: "${{ input.goal }} at ${{ input.level + 1 }}"}
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{}
		res, _ := executeOn(t, h, p, d, Options{Input: map[string]any{"goal": "g"}})
		if !res.OK || !strings.HasPrefix(d.turns[0].Prompt, "g at 3") {
			t.Fatalf("defaults: %+v %q", res.Failure, d.turns[0].Prompt)
		}
		_, _, err := h.walk(context.Background(), t, p, local.Config{Drivers: map[string]Driver{"exec": d}}, Options{})
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Fatalf("missing required input: want InputError, got %v", err)
		}
	})
}

func TestAskUnattended(t *testing.T) {
	p := load(t, "ask", `name: ask
nodes:
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
`)
	onHosts(t, func(t *testing.T, h host) {
		res, _ := executeOn(t, h, p, &fakeDriver{}, Options{})
		if !res.OK || res.Output != "hold" {
			t.Fatalf("unattended ask should take its default: %+v", res)
		}
		p := load(t, "ask", `name: ask
nodes:
  - {id: ship, ask: Ship it?}
`)
		_, _, err := h.walk(context.Background(), t, p, local.Config{}, Options{})
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("an ask without default must be refused unattended, got %v", err)
		}
	})
}

func TestFlowCall(t *testing.T) {
	dir := t.TempDir()
	must := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("main.yaml", "name: main\nmodel: m-main\n"+agents+`nodes:
  - {id: prep, run: [echo, hi]}
  - {id: notes, flow: sub, input: "{topic: prep.output.report}"}
  - {id: after, agent: worker, prompt: "${{ notes.output }}"}
`)
	must("sub.yaml", `name: sub
input: {topic: string}
nodes:
  - {id: write, agent: worker, prompt: "notes on ${{ input.topic }}"}
`)
	p, diags := flows.Load(filepath.Join(dir, "main.yaml"), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{}
		res, facts := executeOn(t, h, p, d, Options{})
		if !res.OK || !slices.Contains(ended(facts), "notes/write") {
			t.Fatalf("call: %+v %v", res.Failure, ended(facts))
		}
		if d.turns[0].Model != "m-main" || !strings.HasPrefix(d.turns[0].Prompt, "notes on echo hi") {
			t.Fatalf("callee turn: model %q prompt %q", d.turns[0].Model, d.turns[0].Prompt)
		}
	})
}

func TestTornJournalLineIsIgnored(t *testing.T) {
	dir := t.TempDir()
	good := `{"type":"start","time":"2026-01-01T00:00:00Z","visit":"a"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(good+`{"type":"end","vis`), 0o644); err != nil {
		t.Fatal(err)
	}
	facts, err := rundir.ReadJournal(dir)
	if err != nil || len(facts) != 1 {
		t.Fatalf("torn line: %v %v", facts, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(`{bad`+"\n"+good), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rundir.ReadJournal(dir); err == nil {
		t.Fatal("a bad line in the middle must be an error")
	}
}

func TestBudgetRefusesTheTurnItCannotCover(t *testing.T) {
	p := load(t, "bud", `name: bud
budget: {tokens: 1200}
`+agents+`nodes:
  - {id: t1, agent: worker, prompt: x}
  - {id: t2, agent: worker, prompt: x}
  - {id: t3, agent: worker, prompt: x}
  - {id: t4, agent: worker, prompt: x}
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &budgetDriver{}
		res, _, err := h.walk(context.Background(), t, p, local.Config{Drivers: map[string]Driver{"exec": d}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || res.Failure.Kind != schema.FailBudget {
			t.Fatalf("want budget, got %+v", res.Failure)
		}
		if d.calls.Load() >= 4 {
			t.Fatalf("%d turns were sent; the fourth must never be", d.calls.Load())
		}
		if res.Usage.Tokens() > 1200+550 {
			t.Fatalf("spent %d tokens under a budget of 1200", res.Usage.Tokens())
		}
	})
}

func TestBudgetStopsARunningTurn(t *testing.T) {
	p := load(t, "bud", `name: bud
`+agents+`nodes:
  - {id: big, agent: worker, prompt: x, budget: {tokens: 100}, on_fail: continue}
  - id: after
    choice:
      - when: big.error.kind == "budget"
        do: [{id: noted, run: [echo, over]}]
`)
	d := &budgetDriver{stream: true}
	res, err := local.Execute(context.Background(), p, local.Config{Drivers: map[string]Driver{"exec": d}, Commands: fakeCommands{}, RunsDir: t.TempDir()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	facts, _ := rundir.ReadJournal(res.Dir)
	if !res.OK || !slices.Contains(ended(facts), "after/noted") {
		t.Fatalf("a budget failure should be a value on_fail and guards can act on: %+v %v", res.Failure, ended(facts))
	}
}

// budgetDriver reports 550 input tokens per turn; with stream it reports
// growing progress and waits to be stopped.
type budgetDriver struct {
	calls  atomic.Int32
	stream bool
}

func (d *budgetDriver) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	d.calls.Add(1)
	in := int64(550)
	if d.stream {
		for tok := int64(50); ; tok += 50 {
			t.Progress(Progress{Activity: "writing", Tokens: tok})
			select {
			case <-ctx.Done():
				return &TurnResult{Status: Aborted, Usage: record.Usage{Input: &tok}}, context.Cause(ctx)
			case <-time.After(5 * time.Millisecond):
			}
			if tok > 10000 {
				return &TurnResult{Status: Completed, Output: "never stopped"}, nil
			}
		}
	}
	return &TurnResult{Status: Completed, Output: "ok", Usage: record.Usage{Input: &in}}, nil
}

// A resumed run replays what ended: the loop's first iteration, the map's
// ended items and the session of the memory scope are rebuilt from the
// journal, and only what did not end runs.
func TestResumeReplaysEndedVisits(t *testing.T) {
	p := load(t, "res", `name: res
`+agents+`nodes:
  - id: fan
    map: "[1, 2, 3]"
    max: 3
    do: [{id: each, agent: worker, prompt: "${{ item }}"}]
  - id: review
    loop: {until: check.output.approved, max: 3}
    do:
      - {id: code, agent: worker, memory: review, reads: [review.previous.check], prompt: fix}
      - {id: check, agent: judge, output: {approved: boolean}, prompt: ok?}
  - {id: after, agent: worker, prompt: "${{ review.output.iterations }} ${{ len(fan.output) }}"}
`)
	onHosts(t, func(t *testing.T, h host) {
		failing := &fakeDriver{answer: func(t *Turn) (string, error) {
			switch {
			case t.Visit == "review#2/check":
				return "", errors.New("server said 500")
			case t.Agent.Name == "judge":
				return `{"approved": false}`, nil
			}
			return "done", nil
		}}
		dir := t.TempDir()
		res, facts, err := h.walk(context.Background(), t, p, local.Config{Drivers: map[string]Driver{"exec": failing}, RunsDir: dir}, Options{RunID: "r1"})
		if err != nil || res.OK || res.Failure.Root().Kind != schema.FailProvider {
			t.Fatalf("first attempt: %v %+v", err, res.Failure)
		}
		second := &fakeDriver{answer: func(t *Turn) (string, error) {
			if t.Agent.Name == "judge" {
				return `{"approved": true}`, nil
			}
			return "done", nil
		}}
		if len(facts) == 0 {
			t.Fatal("the first attempt journaled nothing")
		}
		res, _, err = h.resume(context.Background(), t, p, res, facts, local.Config{Drivers: map[string]Driver{"exec": second}}, Options{})
		if err != nil || !res.OK {
			t.Fatalf("resume: %v %+v", err, res.Failure)
		}
		var visits []string
		for _, tn := range second.turns {
			visits = append(visits, tn.Visit)
		}
		if want := []string{"review#2/check", "after"}; !slices.Equal(visits, want) {
			t.Fatalf("the resume ran %v, want only %v", visits, want)
		}
		if got := second.turns[1].Prompt; !strings.HasPrefix(got, "2 3") {
			t.Fatalf("replayed values: %q", got)
		}
		if h.name != "local" {
			return // the report is the run directory's
		}
		// The report has one row per visit: the one run again shows how it
		// ended this time, the replayed ones how they ended before.
		page, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range []string{`data-visit="review#2/check" data-status="ok"`, `data-visit="fan[1]/each" data-status="ok"`} {
			if n := strings.Count(string(page), row); n != 1 {
				t.Errorf("report.html has %d rows %s, want 1", n, row)
			}
		}
		if n := strings.Count(string(page), `data-visit="review#2/check"`); n != 1 {
			t.Errorf("report.html has %d rows for review#2/check, want 1", n)
		}
	})
}

// An answer over 50 KiB is written to a file in the visit's home; the next
// reader gets a UTF-8-safe prefix and the file's path.
func TestOversizedAnswerIsHandedOnAsAFile(t *testing.T) {
	p := load(t, "big", `name: big
`+agents+`nodes:
  - {id: long, agent: worker, prompt: write a lot}
  - {id: next, agent: judge, reads: [long], prompt: read it}
`)
	big := strings.Repeat("é", 30<<10) // 60 KiB of two-byte runes
	d := &fakeDriver{answer: func(t *Turn) (string, error) {
		if t.Agent.Name == "worker" {
			return big, nil
		}
		return "read", nil
	}}
	res, _ := execute(t, p, d, Options{})
	if !res.OK {
		t.Fatalf("run failed: %v", res.Failure)
	}
	file := filepath.Join(res.Dir, "home", "long", "worker-answer.md")
	if b, err := os.ReadFile(file); err != nil || string(b) != big {
		t.Fatalf("the whole answer is not in %s: %v", file, err)
	}
	prompt := d.turns[1].Prompt
	if !strings.Contains(prompt, file) {
		t.Fatalf("the reader is not told where the answer is:\n%.300s", prompt)
	}
	if !utf8.ValidString(prompt) || len(prompt) > 51<<10 {
		t.Fatalf("the reader got %d bytes, valid UTF-8 %v", len(prompt), utf8.ValidString(prompt))
	}
}

// The resolved model and timeout of each agent visit are recorded with it
// (docs/flow-files.md, agent).
func TestResolvedModelAndTimeoutAreJournaled(t *testing.T) {
	p := load(t, "res", `name: res
model: flow-model
timeout: 7m
`+agents+`nodes:
  - {id: a, agent: worker, prompt: x}
  - {id: b, agent: worker, prompt: x, timeout: 90s}
`)
	onHosts(t, func(t *testing.T, h host) {
		res, facts := executeOn(t, h, p, &fakeDriver{}, Options{})
		if !res.OK {
			t.Fatal(res.Failure)
		}
		got := map[string]string{}
		for _, f := range facts {
			if f.Type == "end" {
				got[f.Visit] = f.Model + " " + f.Timeout
			}
		}
		if got["a"] != "flow-model 7m0s" || got["b"] != "flow-model 1m30s" {
			t.Fatalf("resolved settings per visit: %v", got)
		}
	})
}

// The run's output is written once, to output.json; the journal has it
// already in the facts of the visits it is made of.
func TestRunOutputGoesToOutputJSON(t *testing.T) {
	p := load(t, "out", `name: out
`+agents+`nodes:
  - id: each
    map: "[1, 2]"
    max: 2
    do: [{id: say, agent: worker, prompt: "${{ item }}"}]
`)
	res, facts := execute(t, p, &fakeDriver{}, Options{})
	if !res.OK {
		t.Fatalf("run failed: %+v", res.Failure)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "output.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("output.json: %v\n%s", err, b)
	}
	want, _ := json.Marshal(res.Output)
	if again, _ := json.Marshal(got); string(again) != string(want) {
		t.Errorf("output.json = %s, want %s", again, want)
	}
	for _, f := range facts {
		if f.Type == "run" && f.Output != nil {
			t.Errorf("the run fact repeats the output: %v", f.Output)
		}
	}
}

// deafDriver never looks at its context: it answers after a while.
type deafDriver struct{ after time.Duration }

func (d deafDriver) Turn(context.Context, *Turn) (*TurnResult, error) {
	time.Sleep(d.after)
	return &TurnResult{Status: Completed, Output: "late"}, nil
}

// A turn that outlives its timeout fails `timeout` even if its driver never
// asked for its context's Done (and so no timer was armed).
func TestTimeoutOfADriverThatIgnoresItsContext(t *testing.T) {
	p := load(t, "deaf", `name: deaf
timeout: 20ms
`+agents+`nodes:
  - {id: slow, agent: worker, prompt: x}
`)
	res, err := local.Execute(context.Background(), p, local.Config{Drivers: map[string]Driver{"exec": deafDriver{after: 100 * time.Millisecond}}, RunsDir: t.TempDir()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Failure.Root().Kind != schema.FailTimeout {
		t.Fatalf("want timeout, got %+v", res.Failure)
	}
}

// each must still see only its own item and its own nodes' values.
func TestMapItemsSeeTheirOwnValues(t *testing.T) {
	p := load(t, "fan", `name: fan
input: {items: [integer]}
`+agents+`nodes:
  - id: each
    map: input.items
    max: 100
    concurrency: 4
    do:
      - {id: a, agent: worker, prompt: "a ${{ item }}"}
      - {id: b, agent: worker, prompt: "b ${{ a.output }} ${{ index }} ${{ item }}"}
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{answer: func(t *Turn) (string, error) {
			return "answer to " + strings.SplitN(t.Prompt, "\n", 2)[0], nil
		}}
		items := make([]any, 60)
		for i := range items {
			items[i] = 1000 + i
		}
		res, _ := executeOn(t, h, p, d, Options{Input: map[string]any{"items": items}})
		if !res.OK {
			t.Fatalf("run failed: %v", res.Failure)
		}
		for _, tn := range d.turns {
			if !strings.HasSuffix(tn.Visit, "/b") {
				continue
			}
			var i int
			if _, err := fmt.Sscanf(tn.Visit, "each[%d]/b", &i); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("b answer to a %d %d %d", 999+i, i, 999+i)
			if got := strings.SplitN(tn.Prompt, "\n", 2)[0]; got != want {
				t.Errorf("%s: prompt %q, want %q", tn.Visit, got, want)
			}
		}
		for i, r := range res.Output.([]any) {
			if got, want := r.(map[string]any)["output"], fmt.Sprintf("answer to b answer to a %d %d %d", 1000+i, i+1, 1000+i); got != want {
				t.Errorf("item %d: output %v, want %v", i+1, got, want)
			}
		}
	})
}

// TestResumeDoesNotJournalEndedBlocksAgain: a resume enters a loop or a
// map that ended well only to rebuild its value; the journal keeps one
// start and one end of it (flow show's wall time, /metrics' count), and
// the events announce it replayed, not run.
func TestResumeDoesNotJournalEndedBlocksAgain(t *testing.T) {
	p := load(t, "again", "name: again\n"+agents+`nodes:
  - id: fan
    map: "[1, 2]"
    max: 2
    do:
      - id: rounds
        loop: {until: "true", max: 2}
        do: [{id: mark, agent: worker, prompt: "${{ item }}"}]
  - {id: after, agent: judge, prompt: go}
`)
	onHosts(t, func(t *testing.T, h host) {
		failing := &fakeDriver{answer: func(t *Turn) (string, error) {
			if t.Visit == "after" {
				return "", errors.New("server said 500")
			}
			time.Sleep(5 * time.Millisecond)
			return "done", nil
		}}
		res, facts, err := h.walk(context.Background(), t, p, local.Config{Drivers: map[string]Driver{"exec": failing}}, Options{RunID: "r1"})
		if err != nil || res.OK {
			t.Fatalf("first attempt: %v %+v", err, res.Failure)
		}
		var events []*record.Event
		var mu sync.Mutex
		res, facts, err = h.resume(context.Background(), t, p, res, facts, local.Config{Drivers: map[string]Driver{"exec": &fakeDriver{}}}, Options{OnEvent: func(e *record.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
		if err != nil || !res.OK {
			t.Fatalf("resume: %v %+v", err, res.Failure)
		}
		starts := map[string]int{}
		for _, f := range facts {
			if f.Type == record.FactStart {
				starts[f.Visit]++
			}
		}
		for _, v := range []string{"fan", "fan[1]/rounds", "fan[2]/rounds", "fan[1]/rounds#1/mark"} {
			if starts[v] != 1 {
				t.Errorf("%s started %d times in the journal, want 1", v, starts[v])
			}
		}
		if starts["after"] != 2 {
			t.Errorf("after started %d times, want 2 (it ran again)", starts["after"])
		}
		for _, v := range rundir.Visits(facts) {
			if v.Start.Visit == "fan" && v.End.WallMS < 5 {
				t.Errorf("the map's wall time is %dms: its first attempt's end was replaced", v.End.WallMS)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			if e.Visit == "fan[1]/rounds" && e.Type != record.EventVisitReplayed {
				t.Errorf("the ended loop got a %s event on resume, want only %s", e.Type, record.EventVisitReplayed)
			}
		}
	})
}
