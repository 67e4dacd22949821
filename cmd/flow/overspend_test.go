package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// overspendAgent is an exec agent whose one call reports 100 input, 20
// output, 400 cache-read and 30 cache-write tokens (550 billed) and $0.03.
var overspendAgent = map[string]string{
	"agents/w.md": "---\nname: w\ndescription: works\ndriver: exec\ncommand: [./w.sh]\n---\nWork.\n",
	"agents/w.sh": "#!/usr/bin/env bash\ncat >/dev/null\n" +
		`echo 'FLOW_USAGE {"id":"m1","input":100,"output":20,"cache_read":400,"cache_write":30,"cost":0.03}' >&2` + "\necho done\n",
}

func withFiles(base map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// TestOverspendIsSaidEverywhere: a cost budget of $0.025 that the run's
// first turn ($0.03, nothing could price it) overspends. The exit status
// is a failed run's (the second turn is refused), and the summary, flow
// show, flow run --json's run.end and report.html each say the overspend
// of $0.0050 and why; each also gives the turn's tokens as billed, cache
// included (550), the figure Usage.Tokens counts.
func TestOverspendIsSaidEverywhere(t *testing.T) {
	t.Parallel()
	d := newSweepDir(t, withFiles(overspendAgent, map[string]string{
		"f.yaml": "name: f\nbudget: {cost: 0.025}\nagents: [./agents]\nnodes:\n  - {id: t1, agent: w, prompt: x}\n  - {id: t2, agent: w, prompt: x}\n",
	}))
	const said = "overspent by $0.0050 (spent $0.0300 of $0.0250): the run's first turn (t1) could not be priced before it ran"
	out, code := d.flow("run", "f.yaml")
	if code != 1 {
		t.Fatalf("flow run: exit %d, want 1 (the second turn refused for the budget)\n%s", code, out)
	}
	if !strings.Contains(out, "overspent: the budget of flow f was "+said) {
		t.Errorf("the summary does not name the overspend:\n%s", out)
	}
	runs, _ := runDirsIn(filepath.Join(d.dir, "runs"))
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	id := filepath.Base(runs[0])
	show, code := d.flow("show", id)
	if code != 0 || !strings.Contains(show, "overspent: the budget of flow f was "+said) || !strings.Contains(show, "tokens 550") {
		t.Errorf("flow show (exit %d) does not say the overspend and 550 tokens:\n%s", code, show)
	}
	html, err := os.ReadFile(filepath.Join(runs[0], "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "data-overspend>Overspent: the budget of flow f was overspent by $0.0050") ||
		!strings.Contains(string(html), `id="total-tokens">550<`) {
		t.Errorf("report.html does not say the overspend and 550 tokens")
	}
	info, err := rundir.Inspect(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if info.Usage.Tokens() != 550 || len(info.Overspend) != 1 || info.Overspend[0].LimitCost != 0.025 {
		t.Errorf("the run records %d tokens and overspend %+v", info.Usage.Tokens(), info.Overspend)
	}

	js, _ := d.flow("run", "--json", "f.yaml")
	var end string
	for _, l := range strings.Split(js, "\n") {
		if strings.Contains(l, `"type":"run.end"`) {
			end = l
		}
	}
	if !strings.Contains(end, `"overspend":[{"budget":"flow f"`) || !strings.Contains(end, `"limit_cost":0.025`) ||
		!strings.Contains(end, `"cache_read":400`) {
		t.Errorf("flow run --json's run.end does not carry the overspend and the usage:\n%s", end)
	}
}

// TestOverspendSurvivesAResume: a run that overspent its cost budget on
// its first turn and was interrupted later says so, and still says so
// when a resume finishes it: the resumed attempt counts the earlier one's
// spend (flow show and the summary), and the turn is not paid twice.
func TestOverspendSurvivesAResume(t *testing.T) {
	t.Parallel()
	d := newSweepDir(t, withFiles(overspendAgent, map[string]string{
		"f.yaml": "name: f\nbudget: {cost: 0.025}\nagents: [./agents]\nnodes:\n  - {id: t1, agent: w, prompt: x}\n" +
			"  - {id: nap, run: \"test -f \\\"$STATE/napped\\\" || { touch \\\"$STATE/napped\\\"; sleep 30; }\"}\n  - {id: t2, run: [echo, hi]}\n",
	}))
	cmd := d.cmd("run", "f.yaml")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	await(t, 30*time.Second, "the nap to start", func() bool {
		_, err := os.Stat(filepath.Join(d.dir, "napped"))
		return err == nil
	})
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if !strings.Contains(log.String(), "overspent: the budget of flow f was overspent by $0.0050") {
		t.Errorf("the interrupted run does not say its overspend:\n%s", log.String())
	}
	runs, _ := runDirsIn(filepath.Join(d.dir, "runs"))
	if len(runs) != 1 {
		t.Fatalf("%d runs\n%s", len(runs), log.String())
	}
	out, code := d.flow("resume", filepath.Base(runs[0]))
	if code != 0 || !strings.Contains(out, "overspent: the budget of flow f was overspent by $0.0050") {
		t.Errorf("the resumed run (exit %d) does not say the overspend:\n%s", code, out)
	}
	show, _ := d.flow("show", filepath.Base(runs[0]))
	if !strings.Contains(show, "overspent: the budget of flow f was overspent by $0.0050") || !strings.Contains(show, "tokens 550 ") {
		t.Errorf("flow show of the resumed run:\n%s", show)
	}
}

// TestBudgetStoppedTurnKeepsItsUsageAndNoKey: where the ledger meets the
// redactor. An exec agent echoes a key, split over two writes and quoted,
// and reports 1,820 tokens as it goes; a budget of 1,500 stops it. The
// stopped turn records its usage, partial, as reported; the overspend is
// said; every JSONL file of the run still parses line by line and none of
// the run's files holds the key.
func TestBudgetStoppedTurnKeepsItsUsageAndNoKey(t *testing.T) {
	t.Parallel()
	const key = "sk-QA-3f9a8b7c6d5e4f3a2b1c"
	d := newSweepDir(t, map[string]string{
		"agents/leak.md": "---\nname: leak\ndescription: leaks\ndriver: exec\ncommand: [./leak.sh]\n---\nWork.\n",
		"agents/leak.sh": "#!/usr/bin/env bash\ncat >/dev/null\nprintf 'part: %s' \"${LEAKY_TOKEN:0:7}\"\n" +
			"printf '%s and \"%s\"\\n' \"${LEAKY_TOKEN:7}\" \"$LEAKY_TOKEN\"\necho \"err side: $LEAKY_TOKEN\" >&2\n" +
			`echo 'FLOW_USAGE {"id":"m1","input":900,"output":10}' >&2` + "\nsleep 0.3\n" +
			`echo 'FLOW_USAGE {"id":"m2","input":900,"output":10}' >&2` + "\nsleep 30\necho done\n",
		"f.yaml": "name: f\nbudget: {tokens: 1500}\nagents: [./agents]\nnodes:\n  - {id: t1, agent: leak, prompt: x}\n",
	})
	cmd := d.cmd("run", "f.yaml")
	cmd.Env = append(cmd.Env, "LEAKY_TOKEN="+key)
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err == nil || !strings.Contains(out, "overspent by 320 tokens (spent 1820 of 1500)") {
		t.Fatalf("the run should be stopped by its budget and say its overspend: %v\n%s", err, out)
	}
	if strings.Contains(out, key) {
		t.Errorf("flow's output shows the key:\n%s", out)
	}
	runs, _ := runDirsIn(filepath.Join(d.dir, "runs"))
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	var u *record.Usage
	for _, f := range journal(t, runs[0]) {
		if f.Type == record.FactEnd && f.Visit == "t1" {
			u = f.Usage
		}
	}
	if u == nil || u.Tokens() != 1820 || !u.Partial {
		t.Errorf("the stopped turn recorded %s, want 1820 tokens, partial", showUsage(u))
	}
	err = filepath.WalkDir(runs[0], func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) || strings.Contains(string(b), key[7:]) {
			t.Errorf("%s holds the key", p)
		}
		if strings.HasSuffix(p, ".jsonl") {
			for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				if l != "" && !json.Valid([]byte(l)) {
					t.Errorf("%s:%d is not JSON: %s", p, i+1, l)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSweepOverspendIsSaid: a sweep budget of 500 tokens whose first cell,
// which nothing priced, spends 550 (cache included): the other cell is
// skipped, and the output, report.md and report.json say the overspend of
// 50 tokens and why.
func TestSweepOverspendIsSaid(t *testing.T) {
	t.Parallel()
	d := newSweepDir(t, withFiles(overspendAgent, map[string]string{
		"f.yaml": "name: f\nagents: [./agents]\nnodes:\n  - {id: t1, agent: w, prompt: x}\n",
	}))
	out, code := d.flow("sweep", "f.yaml", "--model", "a", "--repeat", "2", "--budget-tokens", "500")
	if code != 1 || !strings.Contains(out, "overspent by 50 tokens (spent 550 of 500)") {
		t.Fatalf("flow sweep: exit %d, want 1 and the overspend said\n%s", code, out)
	}
	s := d.sweeps()[0]
	r := d.report(s)
	if len(r.Overspend) != 1 || r.Overspend[0].Tokens != 50 || r.Overspend[0].LimitTokens != 500 || r.Spent.Tokens() != 550 {
		t.Errorf("report.json: overspend %+v, spent %d", r.Overspend, r.Spent.Tokens())
	}
	md, _ := os.ReadFile(filepath.Join(s.Dir(), "report.md"))
	if !strings.Contains(string(md), "**Overspent:** the budget of sweep "+s.ID()+" was overspent by 50 tokens") {
		t.Errorf("report.md does not say the overspend:\n%s", md)
	}
}

// runDirsIn lists the run directories under runs (not the files beside
// them, such as .gitignore).
func runDirsIn(runs string) ([]string, error) {
	entries, err := os.ReadDir(runs)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(runs, e.Name()))
		}
	}
	return out, err
}
