package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/clitest"
)

// countNodes counts the nodes of a compiled sequence, nested ones included.
func countNodes(nodes []*flows.Node) int {
	n := len(nodes)
	for _, x := range nodes {
		n += countNodes(x.Body())
		for _, b := range x.Branches() {
			n += countNodes(b.Nodes)
		}
	}
	return n
}

func TestGeneratedFlowsLoad(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		nodes int
	}{
		{"chain", chainFlow("chain", 100), 100},
		{"fan", mapFlow("fan", 1000, 8), 2},
		{"large", largeFlow("large", 1000), 1000},
		{"small", largeFlow("small", 25), 30},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, tt.name+".yaml")
			if err := os.WriteFile(file, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
			if len(diags) > 0 || plan == nil {
				t.Fatalf("the generated flow does not load:\n%v\n%s", diags, tt.src)
			}
			if len(plan.Warnings) > 0 {
				t.Errorf("warnings: %v", plan.Warnings)
			}
			if got := countNodes(plan.Root.Nodes); got != tt.nodes {
				t.Errorf("%d nodes, want %d", got, tt.nodes)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{3 * ms}, 3 * ms},
		{[]time.Duration{9 * ms, 1 * ms, 5 * ms}, 5 * ms},
		{[]time.Duration{4 * ms, 1 * ms, 2 * ms, 9 * ms}, 3 * ms},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestReportCountsMissedTargets(t *testing.T) {
	ms := time.Millisecond
	samples := func(wall time.Duration, rss int64) []sample {
		return []sample{{wall: wall, cpu: wall, rss: rss}}
	}
	results := []result{
		{ // 1.20×: the target holds, the compass does not
			workload: workload{name: "chain of 100", procs: 100, vsFloor: true, ratio: targetChainRatio},
			floor:    samples(100*ms, 1<<20), flow: samples(120*ms, 10<<20),
		},
		{ // 1.30× and 70 MiB: two misses
			workload: workload{name: "map of 1000 at 8", procs: 1000, vsFloor: true, ratio: targetMapRatio, maxRSS: targetMapRSS},
			floor:    samples(100*ms, 1<<20), flow: samples(130*ms, 70<<20),
		},
		{
			workload: workload{name: "validate 1000 nodes", maxWall: targetValidate},
			floor:    samples(2*ms, 1<<20), flow: samples(50*ms, 30<<20),
		},
		{ // 6 ms over the floor: a miss
			workload: workload{name: "flow --version", maxOver: targetVersionOver},
			floor:    samples(2*ms, 1<<20), flow: samples(8*ms, 20<<20),
		},
		{ // 40 ms: the target holds
			workload: workload{name: "--reuse, 200 runs", procs: 1, maxWall: targetReuse},
			floor:    samples(3*ms, 1<<20), flow: samples(40*ms, 20<<20),
		},
		{ // 60 ms a visit over the local chain: a miss
			workload: workload{name: "chain of 50 on Temporal", procs: 50, maxPer: targetTemporalVisit},
			floor:    samples(100*ms, 1<<20), flow: samples(3100*ms, 30<<20),
		},
	}
	engine := []engineBench{
		{name: "MapMemory", metrics: map[string][]float64{"peak-heap-B/item": {1500, 1600, 1550}}},
	}
	var out bytes.Buffer
	missed := report(&out, config{rounds: 1, chain: 100, items: 1000, concurrency: 8, nodes: 1000, engine: 3}, results, engine)
	if missed != 4 {
		t.Errorf("missed = %d, want 4\n%s", missed, &out)
	}
	for _, want := range [][]string{
		{"PASS", "chain of 100: flow / floor", "1.20×", "≤ 1.30×"},
		{"MISS", "chain of 100: flow / floor", "1.20×", "≤ 1.15× (compass)"},
		{"MISS", "map of 1000 at 8: flow / floor", "1.30×", "≤ 1.20×"},
		{"MISS", "flow --version: over the floor", "6.0 ms", "≤ 5.0 ms"},
		{"PASS", "--reuse, 200 runs: whole process", "40.0 ms", "≤ 50.0 ms"},
		{"MISS", "map of 1000 at 8: flow peak RSS", "70.0 MiB", "≤ 64.0 MiB"},
		{"PASS", "validate 1000 nodes: whole process", "50.0 ms", "≤ 100 ms"},
		{"PASS", "MapMemory: peak heap per item", "1.5 KiB", "≤ 4 KiB"},
		{"MISS", "chain of 50 on Temporal: per visit over a local run", "60.0 ms", "≤ 50.0 ms"},
		{"median of 3 invocations"},
	} {
		if !hasLine(out.String(), want...) {
			t.Errorf("the report has no line with %q:\n%s", want, &out)
		}
	}
}

func TestParseBenchmarks(t *testing.T) {
	out := []byte(`goos: linux
BenchmarkSequenceNoop-2   	     300	   8815974 ns/op	         6.369 journal-%	      4537 ns/visit	    220396 visits/s	 5392746 B/op
BenchmarkMapNoop-2        	     300	   9815974 ns/op	        10.50 journal-%	      5537 ns/visit	    180000 visits/s
BenchmarkSequenceNoop-2   	     300	   8915974 ns/op	         8.000 journal-%	      4637 ns/visit	    210000 visits/s	 5392746 B/op
BenchmarkMapMemory        	       3	  50000000 ns/op	      1506 peak-heap-B/item
PASS
ok  	github.com/flowrun/flow/engine	12.3s
`)
	got := parseBenchmarks(out)
	if len(got) != 3 || got[0].name != "SequenceNoop" || got[1].name != "MapNoop" || got[2].name != "MapMemory" {
		t.Fatalf("parsed %+v", got)
	}
	if v := got[0].metrics["journal-%"]; !slices.Equal(v, []float64{6.369, 8}) {
		t.Errorf("SequenceNoop journal-%% = %v, want [6.369 8]", v)
	}
	if v := got[0].metrics["visits/s"]; median(v) != 215198 {
		t.Errorf("SequenceNoop visits/s %v: median %v, want 215198", v, median(v))
	}
	if v := got[2].metrics["peak-heap-B/item"]; !slices.Equal(v, []float64{1506}) {
		t.Errorf("MapMemory peak-heap-B/item = %v", v)
	}
}

// hasLine reports whether a line of s holds every part, in order.
func hasLine(s string, parts ...string) bool {
	for line := range strings.Lines(s) {
		rest, ok := line, true
		for _, p := range parts {
			_, after, found := strings.Cut(rest, p)
			if !found {
				ok = false
				break
			}
			rest = after
		}
		if ok {
			return true
		}
	}
	return false
}

// TestEndToEnd builds both programs and runs one small round of each
// workload. It takes a few seconds, so -short skips it.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds flow and runs it: skipped with -short")
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-rounds", "1", "-chain", "3", "-items", "10", "-concurrency", "2", "-nodes", "20", "-dir", dir, "-engine", "1", "-temporal", "0", "-reuse", "4"}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, &stderr, &stdout)
	}
	for _, want := range []string{"chain of 3", "map of 10 at 2", "validate 20 nodes", "flow --version", "--reuse, 4 runs", "targets (docs/performance.md)",
		"MapMemory: peak heap per item"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, &stdout)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bench-*")); len(left) > 0 {
		t.Errorf("the temporary directory was left behind: %v", left)
	}
}

// TestEndToEndTemporal runs the chain on Temporal once, three nodes long,
// against a dev server it starts: the workload's wiring, not its figure.
func TestEndToEndTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server: skipped with -short")
	}
	clitest.Tool(t, "temporal")
	var stdout, stderr bytes.Buffer
	args := []string{"-rounds", "1", "-chain", "3", "-items", "3", "-concurrency", "2", "-nodes", "20", "-dir", t.TempDir(), "-engine", "0", "-temporal", "3", "-reuse", "0"}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, &stderr, &stdout)
	}
	if !hasLine(stdout.String(), "chain of 3 on Temporal: per visit over a local run", "≤ 50.0 ms") {
		t.Errorf("the output has no target line for the chain on Temporal:\n%s", &stdout)
	}
}
