package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/sweep"
)

// sweepDir is a project for sweep tests: agents/ with scripts, flows, and
// its own runs and sweeps directories.
type sweepDir struct {
	t   *testing.T
	dir string
	bin string
}

func newSweepDir(t *testing.T, files map[string]string) *sweepDir {
	t.Helper()
	d := &sweepDir{t: t, dir: t.TempDir(), bin: flowBinary(t)}
	for name, body := range files {
		path := filepath.Join(d.dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d *sweepDir) cmd(args ...string) *exec.Cmd {
	c := exec.Command(d.bin, args...)
	c.Dir = d.dir
	c.Env = append(os.Environ(), "FLOW_RUNS_DIR="+filepath.Join(d.dir, "runs"), "STATE="+d.dir)
	return c
}

// flow runs the command line and returns its combined output and exit code.
func (d *sweepDir) flow(args ...string) (string, int) {
	d.t.Helper()
	out, err := d.cmd(args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		d.t.Fatal(err)
	}
	return string(out), 0
}

// sweeps opens every sweep of the project, oldest first.
func (d *sweepDir) sweeps() []*sweep.Sweep {
	d.t.Helper()
	files, _ := filepath.Glob(filepath.Join(d.dir, ".flow", "sweeps", "*", "sweep.json"))
	var out []*sweep.Sweep
	for _, f := range files {
		s, err := sweep.Open(filepath.Dir(f))
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *sweep.Sweep) int { return a.Snapshot().Created.Compare(b.Snapshot().Created) })
	return out
}

func (d *sweepDir) report(s *sweep.Sweep) *sweep.Report {
	d.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir(), "report.json"))
	if err != nil {
		d.t.Fatal(err)
	}
	var r sweep.Report
	if err := json.Unmarshal(b, &r); err != nil {
		d.t.Fatal(err)
	}
	return &r
}

// agentEnds returns the end facts of a cell's agent visits.
func agentEnds(t *testing.T, s *sweep.Sweep, c *sweep.Cell) []*record.Fact {
	t.Helper()
	facts, err := rundir.ReadJournal(filepath.Join(s.CellsDir(), c.Run))
	if err != nil {
		t.Fatal(err)
	}
	var out []*record.Fact
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Kind == schema.KindAgent {
			out = append(out, f)
		}
	}
	return out
}

// An agent that says which model it ran on, and reports no usage.
const echoAgent = `#!/usr/bin/env bash
cat >/dev/null
echo "answered on ${FLOW_MODEL:-no model}"
`

// TestSweepPutsEveryAgentOnTheCellsModel: two agent turns whose agents pin
// other models, over --model alpha,beta --repeat 2: 4 cells, 8 turns, each
// on its cell's model and none on a pinned one; the reports have a row per
// model in every format; a cell is a run `flow show` reads.
func TestSweepPutsEveryAgentOnTheCellsModel(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"agents/coder.md":    "---\nname: coder\ndescription: codes\ndriver: exec\nmodel: pinned-model\ncommand: [./echo.sh]\n---\nCode.\n",
		"agents/reviewer.md": "---\nname: reviewer\ndescription: reviews\ndriver: exec\nmodel: pinned-too\ncommand: [./echo.sh]\n---\nReview.\n",
		"agents/echo.sh":     echoAgent,
		"f.yaml": `name: f
agents: [./agents]
model: flow-model
models: {coder: flow-pin}
nodes:
  - {id: code, agent: coder, prompt: one}
  - {id: review, agent: reviewer, prompt: two}
`,
	})
	out, code := d.flow("sweep", "f.yaml", "--model", "alpha,beta", "--repeat", "2")
	if code != 0 {
		t.Fatalf("flow sweep: exit %d\n%s", code, out)
	}
	for _, want := range []string{"4 cell(s)", "worst case 8 agent turn(s)", "forecast: tokens and cost unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	ss := d.sweeps()
	if len(ss) != 1 {
		t.Fatalf("%d sweeps", len(ss))
	}
	s := ss[0]
	f := s.Snapshot()
	if len(f.Cells) != 4 {
		t.Fatalf("%d cells, want 4", len(f.Cells))
	}
	turns := 0
	for _, c := range f.Cells {
		for _, e := range agentEnds(t, s, c) {
			turns++
			if e.Model != c.Assignment || e.Output != "answered on "+c.Assignment {
				t.Errorf("cell %d (%s): %s ran on %q and answered %q", c.Index, c.Assignment, e.Visit, e.Model, e.Output)
			}
		}
	}
	if turns != 8 {
		t.Errorf("%d agent turns, want 8", turns)
	}
	r := d.report(s)
	var labels []string
	for _, row := range r.Assignments {
		labels = append(labels, row.Assignment)
	}
	if !slices.Equal(labels, []string{"alpha", "beta"}) {
		t.Errorf("report.json rows %v", labels)
	}
	md, _ := os.ReadFile(filepath.Join(s.Dir(), "report.md"))
	page, _ := os.ReadFile(filepath.Join(s.Dir(), "report.html"))
	for _, m := range []string{"alpha", "beta"} {
		if !strings.Contains(string(md), "| "+m+" |") {
			t.Errorf("report.md has no row for %s", m)
		}
		if !strings.Contains(string(page), `<tr data-assignment="`+m+`"`) {
			t.Errorf("report.html has no row for %s", m)
		}
	}
	rows := readCSV(t, filepath.Join(s.Dir(), "report.csv"))
	if len(rows) != 3 || rows[1][0] != "alpha" || rows[2][0] != "beta" {
		t.Errorf("report.csv: %v", rows)
	}
	show, code := d.flow("show", filepath.Join(s.CellsDir(), f.Cells[3].Run))
	if code != 0 || !strings.Contains(show, "succeeded") || !strings.Contains(show, "beta") {
		t.Errorf("flow show of a cell: exit %d\n%s", code, show)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// An agent whose answers depend on its model: gold and silver always
// right, bronze wrong on task 3; each model has its price.
const qualityAgent = `#!/usr/bin/env bash
turn=$(cat)
n=$(printf '%s\n' "$turn" | grep -oE '"n": *[0-9]+' | grep -oE '[0-9]+$')
case "$FLOW_MODEL" in
  gold) cost=0.05 ;; silver) cost=0.02 ;; bronze) cost=0.005 ;; *) cost=1 ;;
esac
if [ "$FLOW_MODEL" = bronze ] && [ "$n" = 3 ]; then echo wrong; else echo right; fi
echo "FLOW_USAGE {\"input\": 100, \"output\": 10, \"cost\": $cost}" >&2
`

func qualityProject(t *testing.T) *sweepDir {
	return newSweepDir(t, map[string]string{
		"agents/solver.md":  "---\nname: solver\ndescription: solves\ndriver: exec\nmodel: pinned-model\ncommand: [./solver.sh]\n---\nSolve.\n",
		"agents/checker.md": "---\nname: checker\ndescription: checks\ndriver: exec\ncommand: [./solver.sh]\n---\nCheck.\n",
		"agents/solver.sh":  qualityAgent,
		"tasks.jsonl":       "{\"n\": 1}\n{\"n\": 2}\n{\"n\": 3}\n",
		"f.yaml": `name: f
description: A solver and a checker; success is a right answer.
agents: [./agents]
input: {n: integer}
sweep:
  inputs: tasks.jsonl
  score: solve.output == "right"
  baseline: gold
# the nodes
nodes:
  - {id: solve, agent: solver, reads: [input], prompt: Solve.}
  - {id: check, agent: checker, reads: [input, solve], prompt: Check.}
`,
	})
}

// TestSweepPinChoosesWhatAPersonWould: with silver as good as gold and
// cheaper, and bronze cheapest but wrong on one task in three, the paired
// comparison, the frontier and --pin choose silver; the pinned flow
// validates, and runs on silver, the agent file's own model
// notwithstanding. With only gold and bronze over three runs a task,
// `flow pin` keeps gold: bronze fails a third of the time.
func TestSweepPinChoosesWhatAPersonWould(t *testing.T) {
	d := qualityProject(t)
	before, _ := os.ReadFile(filepath.Join(d.dir, "f.yaml"))
	out, code := d.flow("sweep", "f.yaml", "--model", "gold,silver,bronze", "--repeat", "6", "--concurrency", "3", "--pin")
	if code != 0 {
		t.Fatalf("flow sweep --pin: exit %d\n%s", code, out)
	}
	r := d.report(d.sweeps()[0])
	rows := map[string]*sweep.Row{}
	for _, row := range r.Assignments {
		rows[row.Assignment] = row
	}
	if r.Baseline != "gold" || rows["gold"].Frontier || !rows["silver"].Frontier || !rows["bronze"].Frontier {
		t.Errorf("baseline %s; frontier: gold %v, silver %v, bronze %v", r.Baseline, rows["gold"].Frontier, rows["silver"].Frontier, rows["bronze"].Frontier)
	}
	if c := rows["silver"].VsBaseline; c.Ties != 18 || c.P != 1 {
		t.Errorf("silver against gold: %+v", c)
	}
	if c := rows["bronze"].VsBaseline; c.Losses != 6 || c.Wins != 0 || !near(c.P, 2.0/64) {
		t.Errorf("bronze against gold: %+v", c)
	}
	if r.Pin == nil || r.Pin.Assignment != "silver" || !rows["silver"].Pinned {
		t.Fatalf("chosen %+v", r.Pin)
	}
	after, _ := os.ReadFile(filepath.Join(d.dir, "f.yaml"))
	if changed := diffLines(string(before), string(after)); len(changed) != 1 || changed[0] != "+models: {checker: silver, solver: silver}" {
		t.Errorf("the pin changed %q", changed)
	}
	if out, code := d.flow("validate", "f.yaml"); code != 0 {
		t.Fatalf("the pinned flow does not validate:\n%s", out)
	}
	res, err := d.cmd("run", "--json", "f.yaml", "--input", `{"n": 3}`).Output()
	if err != nil {
		t.Fatalf("the pinned flow does not run: %v\n%s", err, res)
	}
	facts, err := rundir.ReadJournal(runDirOf(t, res))
	if err != nil {
		t.Fatal(err)
	}
	models := 0
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Kind == schema.KindAgent {
			models++
			if f.Model != "silver" {
				t.Errorf("after the pin, %s ran on %q", f.Visit, f.Model)
			}
		}
	}
	if models != 2 {
		t.Errorf("%d agent turns in the pinned run", models)
	}

	t.Run("one always right, one right on 2 of 3 tasks", func(t *testing.T) {
		d := qualityProject(t)
		if out, code := d.flow("sweep", "f.yaml", "--model", "gold,bronze", "--repeat", "3"); code != 0 {
			t.Fatalf("flow sweep: exit %d\n%s", code, out)
		}
		s := d.sweeps()[0]
		out, code := d.flow("pin", s.ID())
		if code != 0 || !strings.Contains(out, "pinned gold") {
			t.Fatalf("flow pin: exit %d\n%s", code, out)
		}
		after, _ := os.ReadFile(filepath.Join(d.dir, "f.yaml"))
		if !strings.Contains(string(after), "\nmodels: {checker: gold, solver: gold}\n# the nodes\nnodes:") {
			t.Errorf("pinned file:\n%s", after)
		}
	})

	t.Run("nothing succeeded: nothing is pinned", func(t *testing.T) {
		d := qualityProject(t)
		file := filepath.Join(d.dir, "f.yaml")
		src, _ := os.ReadFile(file)
		src = []byte(strings.Replace(string(src), `score: solve.output == "right"`, `score: solve.output == "never"`, 1))
		if err := os.WriteFile(file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, code := d.flow("sweep", "f.yaml", "--model", "gold,bronze"); code != 0 {
			t.Fatalf("flow sweep: exit %d\n%s", code, out)
		}
		out, code := d.flow("pin", d.sweeps()[0].ID())
		if code == 0 || !strings.Contains(out, "nothing worth pinning") {
			t.Errorf("flow pin of a sweep nothing succeeded in: exit %d\n%s", code, out)
		}
		if after, _ := os.ReadFile(file); string(after) != string(src) {
			t.Errorf("the file changed:\n%s", after)
		}
	})
}

// diffLines lists the lines only in a ("-…") or only in b ("+…"), for
// files that differ by inserted or removed lines.
func diffLines(a, b string) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			i, j = i+1, j+1
		case j < len(bl) && (i >= len(al) || slices.Contains(al[i:], bl[j]) == false):
			out = append(out, "+"+bl[j])
			j++
		default:
			out = append(out, "-"+al[i])
			i++
		}
	}
	return out
}

// TestSweepReportsSayNotReported: a driver that reports no cost shows "not
// reported" in every format (null in JSON), never $0.
func TestSweepReportsSayNotReported(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"agents/quiet.md": "---\nname: quiet\ndescription: reports nothing\ndriver: exec\ncommand: [./echo.sh]\n---\nWork.\n",
		"agents/echo.sh":  echoAgent,
		"f.yaml":          "name: f\nagents: [./agents]\nnodes:\n  - {id: first, agent: quiet, prompt: one}\n",
	})
	if out, code := d.flow("sweep", "f.yaml", "--model", "a,b"); code != 0 {
		t.Fatalf("flow sweep: exit %d\n%s", code, out)
	}
	s := d.sweeps()[0]
	for _, name := range []string{"report.md", "report.csv", "report.html", "report.json"} {
		b, err := os.ReadFile(filepath.Join(s.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "not reported") || strings.Contains(string(b), "$0.0000") {
			t.Errorf("%s does not say the cost was not reported", name)
		}
	}
	for _, row := range d.report(s).Assignments {
		if row.Cost != nil || !slices.Contains(row.NotReported, "cost") {
			t.Errorf("report.json: %s cost %v, not reported %v", row.Assignment, row.Cost, row.NotReported)
		}
	}
}

// TestSweepReportPageRenders: report.html renders in headless Chromium
// with the chart — a point per assignment and the frontier — and asks
// nothing of the network.
func TestSweepReportPageRenders(t *testing.T) {
	d := qualityProject(t)
	if out, code := d.flow("sweep", "f.yaml", "--model", "gold,silver,bronze", "--repeat", "2"); code != 0 {
		t.Fatalf("flow sweep: exit %d\n%s", code, out)
	}
	page := filepath.Join(d.sweeps()[0].Dir(), "report.html")
	raw, _ := os.ReadFile(page)
	for _, bad := range []string{"http://", "https://", "<script", "<link"} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("the page is not self-contained: it has %q", bad)
		}
	}
	dom := dumpDOM(t, page)
	for _, want := range []string{
		`<svg id="chart"`, `id="frontier" points="`,
		`<g data-assignment="gold" data-frontier="false">`,
		`<g data-assignment="silver" data-frontier="true">`,
		`<g data-assignment="bronze" data-frontier="true">`,
		`<circle class="point frontier"`,
		`<tr data-assignment="silver" class="pinned">`,
		`id="pin">Chosen`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}

// TestSweepTheExample: examples/solve.yaml's own sweep — three models,
// three tasks, three runs each — finds that small gets multiplication
// wrong and pins medium, as cheap as it gets while as good as large.
func TestSweepTheExample(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range []string{"solve.yaml", "solve-tasks.jsonl", "agents/solver.md", "agents/explainer.md", "agents/bin/solver.sh", "agents/bin/explainer.sh"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	d := newSweepDir(t, files)
	out, code := d.flow("sweep", "solve.yaml", "--concurrency", "3", "--pin")
	if code != 0 {
		t.Fatalf("flow sweep: exit %d\n%s", code, out)
	}
	r := d.report(d.sweeps()[0])
	if r.Cells.Total != 27 || r.Cells.Succeeded != 24 || r.Pin == nil || r.Pin.Assignment != "medium" {
		t.Errorf("cells %+v, chosen %+v\n%s", r.Cells, r.Pin, out)
	}
	after, _ := os.ReadFile(filepath.Join(d.dir, "solve.yaml"))
	if changed := diffLines(files["solve.yaml"], string(after)); len(changed) != 1 || changed[0] != "+models: {explainer: medium, solver: medium}" {
		t.Errorf("the pin changed %q", changed)
	}
}
