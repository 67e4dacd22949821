package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// busyCores keeps every core busy with a looping shell until the test
// ends; the test owns the shells and kills and reaps them.
func busyCores(t *testing.T) {
	t.Helper()
	for range runtime.NumCPU() {
		sh := exec.Command("sh", "-c", "while :; do :; done")
		sh.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := sh.Start(); err != nil {
			t.Fatalf("starting a busy loop: %v", err)
		}
		t.Cleanup(func() {
			_ = sh.Process.Kill()
			_ = sh.Wait()
		})
	}
}

// TestRunReportsUnderLoad: a map of printf run nodes at concurrency 16,
// with flow niced and every core busy, records every report whole (issue
// 34: 15 of 1,200 reports were empty, recorded {"exit":0,"passed":true,
// "report":""}).
func TestRunReportsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: hundreds of commands on busy cores")
	}
	const items = 150
	flow := fmt.Sprintf(`name: load
nodes:
  - id: fan
    map: "1..%d"
    max: %d
    concurrency: 16
    do:
      - {id: a, run: [printf, "a %%s\n", "${{ item }}"]}
      - {id: b, run: [printf, "b %%s\n", "${{ item }}"]}
      - {id: c, run: 'printf "c %%s\n" "${{ item }}"'}
      - {id: d, run: 'printf "d %%s\n" "${{ item }}"'}
`, items, items)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "load.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	busyCores(t)
	start := time.Now()
	cmd := exec.Command("nice", "-n", "10", flowBinary(t), "run", "load.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), cleanHome(t))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	facts, err := rundir.ReadJournal(onlyRun(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	reports, lost := 0, 0
	for _, f := range facts {
		if f.Type != record.FactEnd || f.Kind != "run" {
			continue
		}
		reports++
		// fan[12]/c reports "c 12\n".
		item := strings.TrimPrefix(f.Visit[:strings.IndexByte(f.Visit, ']')], "fan[")
		want := f.Node + " " + item + "\n"
		out, _ := f.Output.(map[string]any)
		if out["report"] != want {
			lost++
			if lost <= 5 {
				t.Errorf("%s: output %v, want the report %q", f.Visit, f.Output, want)
			}
		}
	}
	t.Logf("%d run visits with flow at nice 10 on %d busy cores in %v: %d reports lost", reports, runtime.NumCPU(), time.Since(start).Round(time.Millisecond), lost)
	if reports != 4*items || lost > 0 {
		t.Errorf("%d run visits, want %d; %d reports lost", reports, 4*items, lost)
	}
}
