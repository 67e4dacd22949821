package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// noopDriver answers every turn at once, so a benchmark measures the
// engine: visits, scopes, the journal and events, not a model.
type noopDriver struct{}

func (noopDriver) Turn(context.Context, *Turn) (*TurnResult, error) {
	return &TurnResult{Status: Completed, Output: "ok"}, nil
}

const benchAgents = `agents:
  - {name: worker, description: does nothing, driver: exec, command: ["true"]}
`

func benchPlan(b *testing.B, name, src string) *flows.Plan {
	b.Helper()
	dir := b.TempDir()
	p, diags := flows.LoadSource(filepath.Join(dir, name+".yaml"), []byte(src), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir})
	if diags.HasErrors() {
		b.Fatalf("load:\n%s", diags.Error())
	}
	return p
}

// benchRun executes p once per iteration and reports the visits per
// second and the time of one visit: what the engine and its run directory
// cost on top of the steps.
func benchRun(b *testing.B, p *flows.Plan, input any, visits int) {
	runs := benchRunsDir(b)
	var seq atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		cfg := local.Config{Drivers: map[string]Driver{"exec": noopDriver{}}, RunsDir: runs, WorkDir: runs}
		opts := Options{Input: input, RunID: fmt.Sprintf("bench-%d", seq.Add(1))}
		res, err := local.Execute(context.Background(), p, cfg, opts)
		if err != nil {
			b.Fatalf("run: %v", err)
		}
		if !res.OK {
			b.Fatalf("run failed: %v", res.Failure)
		}
		b.StopTimer()
		_ = os.RemoveAll(res.Dir) // keep the disk and the directory small
		b.StartTimer()
	}
	b.ReportMetric(float64(visits)*float64(b.N)/b.Elapsed().Seconds(), "visits/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(visits)/float64(b.N), "ns/visit")
}

// benchRunsDir is where benchmark runs write their run directories. Every
// agent visit creates its home directory, and on a slow disk mkdir alone
// can take hundreds of microseconds and hide the rest of the engine;
// FLOW_BENCH_DIR=/dev/shm (a tmpfs) measures the engine without the disk.
func benchRunsDir(b *testing.B) string {
	if base := os.Getenv("FLOW_BENCH_DIR"); base != "" {
		dir, err := os.MkdirTemp(base, "flow-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// BenchmarkSequenceNoop runs a chain of 1,000 agent nodes.
func BenchmarkSequenceNoop(b *testing.B) {
	const n = 1000
	var src strings.Builder
	src.WriteString("name: chain\n" + benchAgents + "nodes:\n")
	for i := range n {
		fmt.Fprintf(&src, "  - {id: n%d, agent: worker, prompt: step %d}\n", i, i)
	}
	benchRun(b, benchPlan(b, "chain", src.String()), nil, n)
}

// BenchmarkMapNoop runs one agent node over 1,000 items, 8 at a time.
func BenchmarkMapNoop(b *testing.B) {
	const n = 1000
	p := benchPlan(b, "fan", `name: fan
input: {items: [integer]}
concurrency: 8
`+benchAgents+`nodes:
  - id: each
    map: input.items
    max: 1000
    concurrency: 8
    do:
      - {id: work, agent: worker, prompt: "item ${{ item }}"}
`)
	items := make([]any, n)
	for i := range items {
		items[i] = i
	}
	benchRun(b, p, map[string]any{"items": items}, n)
}

// BenchmarkLoopNoop runs a loop of 1,000 iterations of one agent node.
func BenchmarkLoopNoop(b *testing.B) {
	const n = 1000
	p := benchPlan(b, "again", `name: again
`+benchAgents+`nodes:
  - id: again
    loop:
      until: again.iteration >= 1000
      max: 1000
    do:
      - {id: work, agent: worker, prompt: "iteration ${{ again.iteration }}"}
`)
	benchRun(b, p, nil, n)
}

// BenchmarkMapMemory runs a map of 10,000 items of an in-process no-op step
// and reports the peak heap the run added, per item (target: 4 KiB).
func BenchmarkMapMemory(b *testing.B) {
	const n = 10000
	p := benchPlan(b, "wide", `name: wide
concurrency: 8
`+benchAgents+`nodes:
  - id: each
    map: "1..10000"
    max: 10000
    concurrency: 8
    do:
      - {id: work, agent: worker, prompt: "item ${{ item }}"}
`)
	runs := benchRunsDir(b)
	var seq atomic.Int64
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var peak atomic.Uint64
		done := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			var m runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-t.C:
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}
		})
		cfg := local.Config{Drivers: map[string]Driver{"exec": noopDriver{}}, RunsDir: runs, WorkDir: runs}
		opts := Options{RunID: fmt.Sprintf("mem-%d", seq.Add(1))}
		res, err := local.Execute(context.Background(), p, cfg, opts)
		close(done)
		sampler.Wait()
		if err != nil || !res.OK {
			b.Fatalf("run: %v %v", err, res)
		}
		b.ReportMetric(float64(peak.Load()-min(peak.Load(), before.HeapInuse))/n, "peak-heap-B/item")
		b.StopTimer()
		_ = os.RemoveAll(res.Dir)
		b.StartTimer()
	}
}
