package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flowrun/flow/internal/proc"
)

// targetBytesPerItem bounds the peak heap per item of a 10,000-item map,
// which the engine's Go benchmark MapMemory measures.
const targetBytesPerItem = 4 << 10

// engineRuns are the engine's benchmarks the targets need: the
// 10,000-item map's memory.
var engineRuns = [][]string{
	{"-bench", "MapMemory$", "-benchtime", "3x"},
}

// engineBench is one Go benchmark's metrics, one value per invocation.
type engineBench struct {
	name    string
	metrics map[string][]float64 // by unit: "peak-heap-B/item", …
}

// benchEngine runs the engine's Go benchmarks count times each, their runs
// kept under tmp, on the disk the flows run on.
func benchEngine(ctx context.Context, root, tmp string, count int, env []string, log io.Writer) ([]engineBench, error) {
	runs := filepath.Join(tmp, "engine")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, err
	}
	var all []engineBench
	for _, args := range engineRuns {
		fmt.Fprintf(log, "go test %s -count %d ./engine\n", strings.Join(args, " "), count)
		argv := append([]string{"test", "-run", "^$", "-count", strconv.Itoa(count)}, args...)
		// go test runs the benchmarks in a child of its own: the command
		// runs in a process group, so that a cancellation ends both.
		cmd := proc.Command(ctx, "benchflow", "go", append(argv, "./engine")...)
		var out bytes.Buffer
		cmd.Cmd.Dir, cmd.Cmd.Env = root, append(slices.Clone(env), "FLOW_BENCH_DIR="+runs)
		cmd.Cmd.Stdout, cmd.Cmd.Stderr = &out, &out
		err := cmd.Run()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("go test %s ./engine: %w\n%s", strings.Join(args, " "), err, tail(out.Bytes(), 2000))
		}
		all = append(all, parseBenchmarks(out.Bytes())...)
	}
	return all, nil
}

// parseBenchmarks reads `go test -bench` output: each line
// "BenchmarkName-2  300  8815974 ns/op  6.369 journal-%  …" adds its values
// to the benchmark's metrics, in order of first appearance.
func parseBenchmarks(out []byte) []engineBench {
	var benches []engineBench
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		i := slices.IndexFunc(benches, func(b engineBench) bool { return b.name == name })
		if i < 0 {
			benches = append(benches, engineBench{name: name, metrics: map[string][]float64{}})
			i = len(benches) - 1
		}
		for j := 2; j+1 < len(f); j += 2 {
			if v, err := strconv.ParseFloat(f[j], 64); err == nil {
				benches[i].metrics[f[j+1]] = append(benches[i].metrics[f[j+1]], v)
			}
		}
	}
	return benches
}

// engineTargets calls line for each target an engine benchmark measures:
// pass, what, the median measured, the target.
func engineTargets(benches []engineBench, line func(pass bool, what, got, want string)) {
	for _, b := range benches {
		if v := b.metrics["peak-heap-B/item"]; len(v) > 0 {
			m := median(v)
			line(m <= targetBytesPerItem, b.name+": peak heap per item", fmt.Sprintf("%.1f KiB", m/1024), fmt.Sprintf("≤ %d KiB", targetBytesPerItem>>10))
		}
	}
}
