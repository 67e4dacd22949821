package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
)

// The hostile-input cases of sweeps (issue 23).

// quickProject is a flow of one exec agent that says its model.
func quickProject(t *testing.T, agentScript string) *sweepDir {
	t.Helper()
	return newSweepDir(t, map[string]string{
		"agents/quick.md": "---\nname: quick\ndescription: quick\ndriver: exec\ncommand: [./quick.sh]\n---\nWork.\n",
		"agents/quick.sh": agentScript,
		"f.yaml":          "name: f\nagents: [./agents]\nnodes:\n  - {id: only, agent: quick, prompt: go}\n",
	})
}

const quickAgent = "#!/usr/bin/env bash\ncat >/dev/null\necho \"$FLOW_RUN\" >> \"$STATE/turns.log\"\nsleep \"${QUICK_SLEEP:-0}\"\necho \"done on $FLOW_MODEL\"\n"

// Two `flow sweep --resume` of one sweep at once: the second refuses,
// naming the holder's pid, and no cell runs twice.
func TestSweepResumeTwiceAtOnceRefusesTheSecond(t *testing.T) {
	d := quickProject(t, quickAgent)
	if out, code := d.flow("sweep", "f.yaml", "--model", "a,b,c"); code != 0 {
		t.Fatalf("making the sweep: %d\n%s", code, out)
	}
	ss := d.sweeps()
	if len(ss) != 1 {
		t.Fatalf("sweeps: %d", len(ss))
	}
	id := ss[0].ID()
	// The sweep's cells as if none had run yet.
	path := filepath.Join(ss[0].Dir(), "sweep.json")
	var m map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, c := range m["cells"].([]any) {
		c := c.(map[string]any)
		c["status"] = "pending"
		delete(c, "run")
		delete(c, "outcome")
	}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(d.dir, "turns.log"))
	first := d.cmd("sweep", "--resume", id)
	first.Env = append(first.Env, "QUICK_SLEEP=1")
	var out syncBuffer
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	var wg conc.WaitGroup
	wg.Go(func() { _ = first.Wait() })
	defer func() { _ = first.Process.Kill(); wg.Wait() }()
	await(t, 10*time.Second, "the first resume to take the lock:\n"+out.String(), func() bool {
		_, err := os.Stat(filepath.Join(ss[0].Dir(), "lock.json"))
		return err == nil
	})
	second, code := d.flow("sweep", "--resume", id)
	if code != 2 || !strings.Contains(second, "is being run by another flow sweep") || !strings.Contains(second, "pid ") {
		t.Fatalf("the second resume must refuse (exit 2) naming the holder: %d\n%s", code, second)
	}
	wg.Wait()
	if _, err := os.Stat(filepath.Join(ss[0].Dir(), "lock.json")); err == nil {
		t.Errorf("the lock stays after the sweep ended\n%s", out.String())
	}
	b, _ = os.ReadFile(filepath.Join(d.dir, "turns.log"))
	if n := strings.Count(string(b), "\n"); n != 3 {
		t.Fatalf("%d turns for 3 cells:\n%s\n%s", n, b, out.String())
	}
}

// A model named like a formula is text in report.csv; names with a
// newline or a control character are refused at the command line (exit
// 2), and so is what a dry run would run.
func TestSweepHostileNames(t *testing.T) {
	d := quickProject(t, quickAgent)
	if out, code := d.flow("sweep", "f.yaml", "--model", `=SUM(A1;A2),+1+1,-2+3,@SUM(A1)`); code != 0 {
		t.Fatalf("sweep: %d\n%s", code, out)
	}
	rows := readCSV(t, filepath.Join(d.sweeps()[0].Dir(), "report.csv"))
	for _, row := range rows[1:] {
		for _, cell := range row {
			if cell != "" && strings.ContainsRune("=+-@", rune(cell[0])) {
				if _, err := json.Number(cell).Float64(); err != nil {
					t.Errorf("report.csv has a live formula cell %q", cell)
				}
			}
		}
		if !strings.HasPrefix(row[0], "'") {
			t.Errorf("the model cell %q is not neutralised", row[0])
		}
	}
	for _, args := range [][]string{
		{"--model", "a\nb"},
		{"--model", "a\rb"},
		{"--model", "a\x1b[31mb"},
		{"--assign", "quick=ok,bad\tone"},
		{"--baseline", "x\ny", "--model", "x"},
	} {
		for _, dry := range []bool{false, true} {
			argv := append([]string{"sweep", "f.yaml"}, args...)
			if dry {
				argv = append(argv, "--dry-run")
			}
			out, code := d.flow(argv...)
			if code != 2 || !strings.Contains(out, "control character") {
				t.Errorf("%q: %d, want exit 2 naming the control character\n%s", argv, code, out)
			}
		}
	}
	if n := len(d.sweeps()); n != 1 {
		t.Errorf("refused sweeps made directories: %d sweeps", n)
	}
}

// --dry-run refuses the task lines the sweep refuses.
func TestSweepDryRunChecksWhatTheRunChecks(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"f.yaml":      "name: f\ninput: {n: integer}\nnodes:\n  - {id: only, run: [echo, hi]}\n",
		"tasks.jsonl": "{\"n\": 1}\n{\"n\": \"not a number\"}\n",
		"ids.jsonl":   "{\"id\": \"a\\nb\", \"n\": 1}\n",
	})
	for _, tasks := range []string{"tasks.jsonl", "ids.jsonl"} {
		real, realCode := d.flow("sweep", "f.yaml", "--inputs", tasks)
		dry, dryCode := d.flow("sweep", "f.yaml", "--inputs", tasks, "--dry-run")
		if realCode != 2 || dryCode != 2 {
			t.Errorf("%s: the sweep exits %d, the dry run %d; both must refuse (2)\n%s\n%s", tasks, realCode, dryCode, real, dry)
		}
	}
}

// A sweep.json that flow did not write so is a clear error, not a panic.
func TestSweepMalformedFileIsAnError(t *testing.T) {
	d := quickProject(t, quickAgent)
	if out, code := d.flow("sweep", "f.yaml", "--model", "a,b"); code != 0 {
		t.Fatalf("sweep: %d\n%s", code, out)
	}
	dir := d.sweeps()[0].Dir()
	path := filepath.Join(dir, "sweep.json")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]any){
		"assignments null": func(m map[string]any) { m["assignments"] = nil },
		"param_sets null":  func(m map[string]any) { m["param_sets"] = nil },
		"cells null":       func(m map[string]any) { m["cells"] = nil },
		"a null cell":      func(m map[string]any) { m["cells"].([]any)[0] = nil },
		"an unknown assignment": func(m map[string]any) {
			m["cells"].([]any)[0].(map[string]any)["assignment"] = "nobody"
		},
		"a run out of cells/": func(m map[string]any) {
			c := m["cells"].([]any)[0].(map[string]any)
			c["run"], c["status"] = "../../..", "running"
		},
	} {
		var m map[string]any
		if err := json.Unmarshal(orig, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := d.flow("sweep", "--resume", dir)
		if code != 2 || strings.Contains(out, "panic") || !strings.Contains(out, "sweep.json") {
			t.Errorf("%s: %d, want exit 2 naming sweep.json, no panic\n%s", name, code, out)
		}
	}
}
