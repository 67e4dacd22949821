package run

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/flowrun/flow/engine"
)

// contend keeps every core busy until the test ends: one busy-looping
// shell per core (the machine is busy) and one busy goroutine per P (the
// goroutine that reads a command's output waits behind it). The test
// owns them: Cleanup kills and reaps the shells and stops the goroutines.
func contend(t *testing.T) {
	t.Helper()
	stop := make(chan struct{})
	var spinners sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		spinners.Go(func() {
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		})
	}
	var shells []*exec.Cmd
	for range runtime.NumCPU() {
		sh := exec.Command("sh", "-c", "while :; do :; done")
		sh.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := sh.Start(); err != nil {
			t.Fatalf("starting a busy loop: %v", err)
		}
		shells = append(shells, sh)
	}
	t.Cleanup(func() {
		close(stop)
		spinners.Wait()
		for _, sh := range shells {
			_ = sh.Process.Kill()
			_ = sh.Wait()
		}
	})
}

// TestNoOutputLostUnderLoad: thousands of short commands, sixteen at a
// time, with every core busy: each report is the command's whole output.
// A reader scheduled late after the command's exit must still take what
// the command wrote (issue 34: 15 of 1,200 reports were empty).
func TestNoOutputLostUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test: thousands of commands on busy cores")
	}
	const commands, concurrency = 5000, 16
	contend(t)
	c := New()
	var lost, failed atomic.Int64
	var firstLoss atomic.Value
	start := time.Now()
	p := pool.New().WithMaxGoroutines(concurrency)
	for i := range commands {
		p.Go(func() {
			want := fmt.Sprintf("report %d of the load test\n", i)
			cmd := &engine.Command{
				RunID:    "load-test",
				Visit:    fmt.Sprintf("printf/%d", i),
				Argv:     []string{"printf", want},
				Home:     "", // in memory: the report is all there is
				Progress: func(engine.Progress) {},
			}
			res, err := c.Run(context.Background(), cmd)
			switch {
			case err != nil || !res.Passed:
				failed.Add(1)
				firstLoss.CompareAndSwap(nil, fmt.Sprintf("command %d: %+v, %v", i, res, err))
			case res.Report != want:
				lost.Add(1)
				firstLoss.CompareAndSwap(nil, fmt.Sprintf("command %d: report %q, want %q", i, res.Report, want))
			}
		})
	}
	p.Wait()
	t.Logf("%d commands at concurrency %d on %d busy cores in %v: %d reports lost, %d failed",
		commands, concurrency, runtime.NumCPU(), time.Since(start).Round(time.Millisecond), lost.Load(), failed.Load())
	if lost.Load() != 0 || failed.Load() != 0 {
		t.Errorf("%d of %d reports lost and %d commands failed; first: %v", lost.Load(), commands, failed.Load(), firstLoss.Load())
	}
}
