package sweep_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/internal/ratelimit"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/steps/claude"
	"github.com/flowrun/flow/steps/codex"
	"github.com/flowrun/flow/steps/openai"
	"github.com/flowrun/flow/sweep"
)

// limitedSweep runs a one-turn flow `cells` times (one task, repeated) at
// concurrency conc through driver d against s, and returns its report and
// how long it took.
func limitedSweep(t *testing.T, s *modelserver.Server, driver string, d engine.Driver, cells, conc int, onCell ...func(sweep.CellEvent)) (*sweep.Report, time.Duration, string, *sweep.Sweep, *flows.Plan) {
	t.Helper()
	dir := t.TempDir()
	src := `name: limited
agents:
  - {name: worker, description: answers, driver: ` + driver + `, base_url: "` + s.URL() + `", api_key_env: FLOW_TEST_LIMIT_KEY}
nodes:
  - {id: ask, agent: worker, prompt: Say ok.}
`
	file := filepath.Join(dir, "limited.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sw, err := sweep.Create(filepath.Join(dir, "sweeps"), plan, sweep.Config{
		Spec: sweep.Spec{Models: []string{"test-model"}, Repeat: cells}, Concurrency: conc, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ro := sweep.RunOptions{Host: runner.Host{Drivers: map[string]engine.Driver{driver: d}, WorkDir: dir}, Engine: engine.Options{Concurrency: conc}}
	if len(onCell) > 0 {
		ro.OnCell = onCell[0]
	}
	err = sw.Run(context.Background(), plan, ro)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "sweeps", sw.ID(), "report.md"))
	return sweep.Build(sw.Snapshot()), took, string(md), sw, plan
}

// 60 one-turn cells at concurrency 10 against a server that takes 10
// requests per 5 s window: none fails, almost nothing is refused after
// the first window, and the sweep takes little more than the limit's
// minimum (five more windows: 25 s). The window is 5 s rather than a
// minute to keep the test short, and long enough that the fixed costs of
// starting and ending cells stay well inside the 1.2× bound.
func TestSweepUnderARateLimitOpenAI(t *testing.T) {
	t.Setenv("FLOW_TEST_LIMIT_KEY", "sk-limit-test")
	s := modelserver.Start(t)
	const perWindow, window, cells = 10, 5 * time.Second, 60
	s.SetLimit(modelserver.Limit{Requests: perWindow, Window: window})
	var waiting []string
	rep, took, md, _, _ := limitedSweep(t, s, "openai", openai.New(openai.Options{}), cells, 10, func(ev sweep.CellEvent) {
		if ev.Waiting != "" {
			waiting = append(waiting, ev.Waiting)
		}
	})
	if len(waiting) == 0 || !strings.HasPrefix(waiting[0], "waiting ") || !strings.Contains(waiting[0], " s for 127.0.0.1:") {
		t.Errorf("the sweep's progress said %q of the waits, want \"waiting N s for 127.0.0.1:… (rate limit)\"", waiting[:min(len(waiting), 3)])
	}
	least := time.Duration((cells+perWindow-1)/perWindow-1) * window
	refusedLater, total := 0, 0
	var ats []string
	for _, e := range s.LimitLog() {
		ats = append(ats, e.At.Round(10*time.Millisecond).String())
		total++
		if e.Refused && e.At >= window {
			refusedLater++
			t.Logf("refused at %v", e.At)
		}
	}
	t.Logf("requests at %s", strings.Join(ats, " "))
	t.Logf("%d cells in %v (limit-bound minimum %v); %d requests, %d refused after the first window\n%s", cells, took, least, total, refusedLater, md)
	if rep.Cells.Succeeded != cells || rep.Cells.Failed != 0 {
		t.Errorf("cells %+v, want all %d succeeded", rep.Cells, cells)
	}
	if refusedLater*20 >= total {
		t.Errorf("%d of %d requests refused after the first window, want under 5%%", refusedLater, total)
	}
	if took > least*12/10 {
		t.Errorf("took %v, want within 1.2× of the limit-bound %v", took, least)
	}
	if len(rep.Providers) != 1 || rep.Providers[0].Requests < cells {
		t.Errorf("providers %+v, want one with at least %d requests", rep.Providers, cells)
	}
	if !strings.Contains(md, "## Providers") || !strings.Contains(md, "cache hit ratio") {
		t.Errorf("report.md lacks the providers or the cache hit ratio:\n%s", md)
	}
}

// A quota ends the sweep's cells fast, with the provider's message, and
// none of them is scored.
func TestSweepQuotaEndsCellsFast(t *testing.T) {
	t.Setenv("FLOW_TEST_LIMIT_KEY", "sk-limit-test")
	s := modelserver.Start(t)
	s.SetLimit(modelserver.Limit{Quota: true, QuotaAfter: 3})
	rep, took, md, sw, plan := limitedSweep(t, s, "openai", openai.New(openai.Options{}), 12, 2)
	t.Logf("in %v:\n%s", took, md)
	if rep.Cells.Succeeded != 3 || rep.Cells.Quota != 9 || rep.Cells.Failed != 0 {
		t.Errorf("cells %+v, want 3 succeeded and 9 ended on the quota, none failed", rep.Cells)
	}
	if n := len(s.LimitLog()); n != 4 {
		t.Errorf("%d requests, want 4: after the quota nothing more is sent", n)
	}
	if took > 10*time.Second {
		t.Errorf("took %v; a quota should end the cells fast", took)
	}
	if !strings.Contains(md, "exceeded your current quota") || rep.Assignments[0].Quota != 9 {
		t.Errorf("the report does not say the quota ended 9 cells:\n%s", md)
	}
	// Once the quota is back, a resume runs the cells it ended.
	s.SetLimit(modelserver.Limit{})
	ratelimit.Default.Reset()
	if err := sw.Run(context.Background(), plan, sweep.RunOptions{Host: runner.Host{Drivers: map[string]engine.Driver{"openai": openai.New(openai.Options{})}, WorkDir: t.TempDir()}, Engine: engine.Options{
		Concurrency: 2}}); err != nil {
		t.Fatal(err)
	}
	if c := sweep.Build(sw.Snapshot()).Cells; c.Succeeded != 12 || c.Quota != 0 {
		t.Errorf("after the resume, cells %+v, want all 12 succeeded", c)
	}
}

// Claude Code and Codex, real, against a lower limit: the cells the limit
// refuses are run again, and none is scored as failed.
func TestSweepUnderARateLimitCLIs(t *testing.T) {
	t.Setenv("FLOW_TEST_LIMIT_KEY", "sk-limit-test")
	for _, c := range []struct {
		name string
		d    func(bin, url string) engine.Driver
	}{
		{"claude", func(bin, url string) engine.Driver {
			return claude.New(claude.Options{Binary: bin, BaseURL: url, APIKeyEnv: "FLOW_TEST_LIMIT_KEY", Grace: time.Second})
		}},
		{"codex", func(bin, _ string) engine.Driver {
			return codex.New(codex.Options{Binary: bin, CodexHome: t.TempDir()})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := clitest.Binary(t, c.name)
			s := modelserver.Start(t)
			s.SetLimit(modelserver.Limit{Requests: 2, Window: 2 * time.Second})
			d := c.d(bin, s.URL())
			rep, took, md, _, _ := limitedSweep(t, s, c.name, d, 6, 3)
			refused := 0
			for _, e := range s.LimitLog() {
				if e.Refused {
					refused++
				}
			}
			t.Logf("%s: 6 cells in %v, %d requests refused, %d re-runs\n%s", c.name, took, refused, rep.Assignments[0].Reruns, md)
			if rep.Cells.Succeeded != 6 || rep.Cells.Failed != 0 {
				t.Errorf("cells %+v, want all 6 succeeded (re-run if refused)", rep.Cells)
			}
		})
	}
}
