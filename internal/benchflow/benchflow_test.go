package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/flows"
)

// countNodes counts the nodes of a compiled sequence, nested ones included.
func countNodes(nodes []*flows.Node) int {
	n := len(nodes)
	for _, x := range nodes {
		n += countNodes(x.Body)
		for _, b := range x.Branches {
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
			plan, diags := flows.Load(file, flows.Options{UserAgentDirs: []string{}})
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
			workload: workload{name: "chain of 100", procs: 100, vsFloor: true},
			floor:    samples(100*ms, 1<<20), flow: samples(120*ms, 10<<20),
		},
		{ // 1.30× and 70 MiB: two misses
			workload: workload{name: "map of 1000 at 8", procs: 1000, vsFloor: true, maxRSS: targetMapRSS},
			floor:    samples(100*ms, 1<<20), flow: samples(130*ms, 70<<20),
		},
		{
			workload: workload{name: "validate 1000 nodes", maxWall: targetValidate},
			floor:    samples(2*ms, 1<<20), flow: samples(50*ms, 30<<20),
		},
	}
	var out bytes.Buffer
	missed := report(&out, config{rounds: 1, chain: 100, items: 1000, concurrency: 8, nodes: 1000}, results)
	if missed != 2 {
		t.Errorf("missed = %d, want 2\n%s", missed, &out)
	}
	for _, want := range [][]string{
		{"PASS", "chain of 100: flow / floor", "1.20×", "≤ 1.25×"},
		{"MISS", "chain of 100: flow / floor", "1.20×", "≤ 1.15× (compass)"},
		{"MISS", "map of 1000 at 8: flow / floor", "1.30×", "≤ 1.25×"},
		{"MISS", "map of 1000 at 8: flow peak RSS", "70.0 MiB", "≤ 64.0 MiB"},
		{"PASS", "validate 1000 nodes: whole process", "50.0 ms", "≤ 100 ms"},
	} {
		if !hasLine(out.String(), want...) {
			t.Errorf("the report has no line with %q:\n%s", want, &out)
		}
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
	args := []string{"-rounds", "1", "-chain", "3", "-items", "10", "-concurrency", "2", "-nodes", "20", "-dir", dir}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, &stderr, &stdout)
	}
	for _, want := range []string{"chain of 3", "map of 10 at 2", "validate 20 nodes", "targets (issue 5)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, &stdout)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bench-*")); len(left) > 0 {
		t.Errorf("the temporary directory was left behind: %v", left)
	}
}
