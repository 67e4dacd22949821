package sweep

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
)

func cost(v float64) *float64 { return &v }
func count64(v int64) *int64  { return &v }

// fileOf makes a sweep file whose cells have the given successes: wins[a]
// holds, per task and then per repetition, whether assignment a succeeded.
func fileOf(repeat int, perRun map[string]*float64, wins map[string][][]bool) *File {
	f := &File{ID: "s", Flow: "f", Spec: Spec{Repeat: repeat}}
	for _, label := range []string{"gold", "silver", "bronze"} {
		w, ok := wins[label]
		if !ok {
			continue
		}
		f.Assignments = append(f.Assignments, Assignment{Label: label, Model: label})
		for ti, reps := range w {
			for ri, ok := range reps {
				o := &Outcome{Status: record.StatusSucceeded, Success: ok, Score: 1, WallMS: int64(100 * (ri + 1)),
					Usage: record.Usage{Cost: perRun[label], Input: count64(10)}, Attempts: 2}
				status := StatusSucceeded
				if !ok {
					o.Score, o.Failure, status = 0, FailScore, StatusFailed
				}
				f.Cells = append(f.Cells, &Cell{Index: len(f.Cells) + 1, Assignment: label, Task: string(rune('a' + ti)), Repeat: ri + 1, Status: status, Outcome: o})
			}
		}
	}
	return f
}

func all(tasks, reps int, pattern func(t, r int) bool) [][]bool {
	out := make([][]bool, tasks)
	for t := range out {
		out[t] = make([]bool, reps)
		for r := range out[t] {
			out[t][r] = pattern(t, r)
		}
	}
	return out
}

func TestReportStatistics(t *testing.T) {
	// Three tasks, three runs each: task a succeeds 3 of 3, task b 2 of 3,
	// task c 1 of 3: 6 of 9.
	f := fileOf(3, map[string]*float64{"gold": cost(0.03)}, map[string][][]bool{
		"gold": all(3, 3, func(t, r int) bool { return r < 3-t }),
	})
	r := Build(f)
	row := r.Assignments[0]
	if row.N != 9 || row.Successes != 6 {
		t.Fatalf("n %d, successes %d", row.N, row.Successes)
	}
	// pass^3 per task: 1, C(2,3)/C(3,3) = 0, 0 → 1/3; pass@3: 1, 1, 1 → 1.
	if math.Abs(*row.PassHatK-1.0/3) > 1e-12 || *row.PassAtK != 1 {
		t.Errorf("pass^3 %v, pass@3 %v", *row.PassHatK, *row.PassAtK)
	}
	if math.Abs(*row.WilsonLow-0.3542021356) > 1e-9 || math.Abs(*row.WilsonHigh-0.8794161816) > 1e-9 {
		t.Errorf("Wilson [%v, %v]", *row.WilsonLow, *row.WilsonHigh)
	}
	if math.Abs(*row.Cost-0.27) > 1e-12 || math.Abs(*row.CostPerSuccess-0.045) > 1e-12 {
		t.Errorf("cost %v, per success %v", *row.Cost, *row.CostPerSuccess)
	}
	if row.Failures[FailScore] != 3 || row.Attempts != 18 || row.Turns != nil {
		t.Errorf("failures %v, attempts %d, turns %v (none reported)", row.Failures, row.Attempts, row.Turns)
	}
	if *row.WallP50 != 200 || math.Abs(*row.WallP95-300) > 1e-9 {
		t.Errorf("wall p50 %v, p95 %v", *row.WallP50, *row.WallP95)
	}
}

func TestReportChoosesWhatAPersonWould(t *testing.T) {
	always := func(int, int) bool { return true }
	twoOfThree := func(t, _ int) bool { return t != 2 } // always fails task c
	tests := []struct {
		name     string
		repeat   int
		wins     map[string][][]bool
		frontier []string
		chosen   string
		p        map[string]float64
	}{
		{
			name:   "as good and cheaper wins; visibly worse loses",
			repeat: 6,
			wins:   map[string][][]bool{"gold": all(3, 6, always), "silver": all(3, 6, always), "bronze": all(3, 6, twoOfThree)},
			// bronze loses 6 pairs: p = 2/64.
			frontier: []string{"silver", "bronze"}, chosen: "silver", p: map[string]float64{"silver": 1, "bronze": 0.03125},
		},
		{
			name:   "one always right, one right on 2 of 3 tasks: the cheap one fails too often",
			repeat: 3,
			wins:   map[string][][]bool{"gold": all(3, 3, always), "bronze": all(3, 3, twoOfThree)},
			// McNemar alone cannot tell (p = 0.25), but 6/9 lies below gold's Wilson interval [0.70, 1].
			frontier: []string{"gold", "bronze"}, chosen: "gold", p: map[string]float64{"bronze": 0.25},
		},
		{
			name:   "against a best that never failed, one failure rules a candidate out",
			repeat: 3,
			wins: map[string][][]bool{"gold": all(3, 3, always),
				"bronze": all(3, 3, func(t, r int) bool { return t != 1 || r != 0 })},
			frontier: []string{"gold", "bronze"}, chosen: "gold", p: map[string]float64{"bronze": 1},
		},
		{
			name:   "one more failure in nine is within the noise",
			repeat: 3,
			// gold fails task a once, bronze task b once and task c once: 8/9 against 7/9.
			wins: map[string][][]bool{"gold": all(3, 3, func(t, r int) bool { return t != 0 || r != 0 }),
				"bronze": all(3, 3, func(t, r int) bool { return !(t == 1 && r == 1) && !(t == 2 && r == 2) })},
			frontier: []string{"gold", "bronze"}, chosen: "bronze", p: map[string]float64{"bronze": 1},
		},
		{
			name:     "repeat 1: right on 2 of 3 tasks is not as good as 3 of 3",
			repeat:   1,
			wins:     map[string][][]bool{"gold": all(3, 1, always), "bronze": all(3, 1, twoOfThree)},
			frontier: []string{"gold", "bronze"}, chosen: "gold", p: map[string]float64{"bronze": 1},
		},
	}
	prices := map[string]*float64{"gold": cost(0.05), "silver": cost(0.02), "bronze": cost(0.005)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Build(fileOf(tt.repeat, prices, tt.wins))
			var front []string
			for _, row := range r.Assignments {
				if row.Frontier {
					front = append(front, row.Assignment)
				}
				if p, ok := tt.p[row.Assignment]; ok && math.Abs(row.VsBaseline.P-p) > 1e-12 {
					t.Errorf("%s against gold: p = %v, want %v", row.Assignment, row.VsBaseline.P, p)
				}
			}
			if strings.Join(front, " ") != strings.Join(tt.frontier, " ") {
				t.Errorf("frontier %v, want %v", front, tt.frontier)
			}
			if r.Pin == nil || r.Pin.Assignment != tt.chosen {
				t.Errorf("chosen %+v, want %s", r.Pin, tt.chosen)
			}
		})
	}
}

func TestNotReportedInEveryFormat(t *testing.T) {
	f := fileOf(1, map[string]*float64{}, map[string][][]bool{"gold": all(2, 1, func(int, int) bool { return true })})
	for _, c := range f.Cells {
		c.Outcome.Usage = record.Usage{WallMS: 5}
		c.Outcome.Nodes = []NodeUse{{Node: "a", Kind: "agent", Agent: "coder", Model: "gold", Visits: 1}}
	}
	r := Build(f)
	if r.Basis != "wall" {
		t.Errorf("basis %q with nothing reported", r.Basis)
	}
	for name, render := range map[string]func(*Report) ([]byte, error){"md": markdown, "csv": csvReport, "html": htmlReport} {
		b, err := render(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), notReported) || strings.Contains(string(b), "$0.0000") {
			t.Errorf("%s: cost shows as %q or $0", name, notReported)
		}
	}
	b, _ := jsonReport(r)
	var back struct {
		Assignments []struct {
			Cost        *float64 `json:"cost"`
			NotReported []string `json:"not_reported"`
		} `json:"assignments"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	row := back.Assignments[0]
	if row.Cost != nil || !strings.Contains(strings.Join(row.NotReported, " "), "cost") {
		t.Errorf("json: cost %v, not reported %v", row.Cost, row.NotReported)
	}
	if !strings.Contains(string(b), `"cost": null`) {
		t.Error("json: cost is not null")
	}
}

// TestReportExplainsItself: the per-task table says small fails only on
// mul; a budget-skipped cell makes the choice a warned one (in the report
// and on the Choice flow pin prints); a run whose second agent reported no
// cost is warned of and not compared by cost; "turns" is usage.json's.
func TestReportExplainsItself(t *testing.T) {
	f := &File{ID: "s", Flow: "f", Spec: Spec{Repeat: 2}}
	f.Assignments = []Assignment{{Label: "small", Model: "small"}, {Label: "large", Model: "large"}}
	agent := func(c *float64) NodeUse {
		return NodeUse{Node: "code", Kind: "agent", Visits: 1, Usage: record.Usage{Cost: c, Input: count64(5)}}
	}
	for _, a := range []string{"small", "large"} {
		for _, task := range []string{"add", "mul"} {
			for rep := 1; rep <= 2; rep++ {
				ok := a == "large" || task == "add"
				o := &Outcome{Status: record.StatusSucceeded, Success: ok, Attempts: 1,
					Usage: record.Usage{Cost: cost(0.01), Input: count64(10), Turns: count64(3)},
					Nodes: []NodeUse{agent(cost(0.01))}}
				status := StatusSucceeded
				if !ok {
					o.Status, o.Failure, status = record.StatusFailed, "provider", StatusFailed
				}
				if a == "large" && task == "mul" && rep == 1 {
					o.Nodes = append(o.Nodes, agent(nil)) // the reviewer's driver reported no cost
				}
				c := &Cell{Index: len(f.Cells) + 1, Assignment: a, Task: task, Repeat: rep, Status: status, Outcome: o}
				if a == "large" && task == "mul" && rep == 2 {
					c.Status, c.Outcome, c.Note = StatusSkipped, nil, "the sweep's budget is spent"
				}
				f.Cells = append(f.Cells, c)
			}
		}
	}
	r := Build(f)
	tasks := map[string]*TaskRow{}
	for _, tr := range r.Tasks {
		tasks[tr.Assignment+"/"+tr.Task] = tr
	}
	if tr := tasks["small/mul"]; tr == nil || tr.N != 2 || tr.Successes != 0 || tr.Failures["provider"] != 2 {
		t.Errorf("small on mul: %+v, want 0 of 2, both provider", tr)
	}
	if tr := tasks["small/add"]; tr == nil || tr.Successes != 2 || tasks["large/mul"].N != 1 {
		t.Errorf("tasks: %+v", r.Tasks)
	}
	joined := strings.Join(r.Warnings, "\n")
	if !strings.Contains(joined, "incomplete grid: 1 of 8 cells did not end (1 skipped by a budget") ||
		!strings.Contains(joined, "partial cost: in 1 run(s) of large") {
		t.Errorf("warnings:\n%s", joined)
	}
	if r.Basis != "tokens" {
		t.Errorf("a partial cost compared as full: basis %q, want tokens", r.Basis)
	}
	if r.Pin == nil || len(r.Pin.Warnings) != len(r.Warnings) {
		t.Errorf("the choice should carry the warnings: %+v", r.Pin)
	}
	if row := r.Assignments[0]; row.Turns == nil || *row.Turns != 12 || row.Attempts != 4 {
		t.Errorf("small: turns %v (usage.json's), attempts %d", row.Turns, row.Attempts)
	}
	md, _ := markdown(r)
	for _, want := range []string{"## Per task", "| small | mul |  | 2 | 0 | provider 2 |", "> **Warning:** incomplete grid"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	page, _ := htmlReport(r)
	if !strings.Contains(string(page), `id="tasks"`) || !strings.Contains(string(page), "data-warning") {
		t.Error("report.html lacks the per-task table or the warnings")
	}
}
