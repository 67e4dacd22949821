package run_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/steps/run"
)

// BenchmarkEngineRunTrue runs a map of 100 `run: ["true"]` items, 8 at a
// time, through the engine and run.Commander, next to the floor: spawning
// `true` as often with plain os/exec at the same concurrency. The ratio of
// their ns/visit is what a run node costs beyond its process. (It is not
// called BenchmarkRunTrue: that name is the single-command benchmark in
// bench_test.go.)
func BenchmarkEngineRunTrue(b *testing.B) {
	const items, concurrency = 100, 8
	if _, err := exec.LookPath("true"); err != nil {
		b.Skip("no true on PATH")
	}
	b.Run("engine", func(b *testing.B) {
		dir := b.TempDir()
		if base := os.Getenv("FLOW_BENCH_DIR"); base != "" {
			// As in the engine's benchmarks: run directories on a tmpfs
			// take the disk's mkdir latency out of the figure.
			var err error
			if dir, err = os.MkdirTemp(base, "flow-bench-"); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = os.RemoveAll(dir) })
		}
		src := fmt.Sprintf(`name: truth
input: {items: [integer]}
nodes:
  - id: each
    map: input.items
    max: %d
    concurrency: %d
    do:
      - {id: ok, run: ["true"]}
`, items, concurrency)
		plan, diags := flows.LoadSource(filepath.Join(dir, "truth.yaml"), []byte(src), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir})
		if diags.HasErrors() {
			b.Fatalf("load:\n%s", diags.Error())
		}
		in := make([]any, items)
		for i := range in {
			in[i] = i
		}
		cfg := local.Config{Commands: run.New(), RunsDir: filepath.Join(dir, "runs"), WorkDir: dir}
		opts := engine.Options{Input: map[string]any{"items": in}}
		n := 0
		for b.Loop() {
			n++
			opts.RunID = fmt.Sprintf("bench-%d", n)
			res, err := local.Execute(context.Background(), plan, cfg, opts)
			if err != nil {
				b.Fatalf("run: %v", err)
			}
			if !res.OK {
				b.Fatalf("run failed: %v", res.Failure)
			}
			b.StopTimer()
			_ = os.RemoveAll(res.Dir)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(items*b.N), "ns/visit")
	})
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			var wg sync.WaitGroup
			sem := make(chan struct{}, concurrency)
			errs := make([]error, items)
			for i := range items {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					errs[i] = exec.Command("true").Run()
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(items*b.N), "ns/visit")
	})
}
