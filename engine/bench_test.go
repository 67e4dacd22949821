package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
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
	p, diags := flows.LoadSource(filepath.Join(dir, name+".yaml"), []byte(src), flows.Options{UserAgentDirs: []string{}, WorkDir: dir})
	if diags.HasErrors() {
		b.Fatalf("load:\n%s", diags.Error())
	}
	return p
}

// benchRun executes p twice per iteration, with the journal on and off,
// and reports the visits per second and the time of one visit with the
// journal on, the time of one visit without it, and what the journal
// costs. Interleaving the two keeps a noisy machine from favouring either,
// and so does swapping which goes first each iteration: the first of a
// pair ran 0.4–1.1% slower than the second with the journal off in both.
func benchRun(b *testing.B, p *flows.Plan, input any, visits int) {
	runs := benchRunsDir(b)
	var seq atomic.Int64
	var on, off time.Duration
	once := func(journal bool) time.Duration {
		opts := Options{Drivers: map[string]Driver{"exec": noopDriver{}}, RunsDir: runs, WorkDir: runs,
			Input: input, NoJournal: !journal, RunID: fmt.Sprintf("bench-%d", seq.Add(1))}
		start := time.Now()
		var res *Result
		var err error
		// The label tells the two apart in a profile: -tagfocus=journal=true.
		pprof.Do(context.Background(), pprof.Labels("journal", fmt.Sprint(journal)), func(ctx context.Context) {
			res, err = Execute(ctx, p, opts)
		})
		took := time.Since(start)
		if err != nil {
			b.Fatalf("run: %v", err)
		}
		if !res.OK {
			b.Fatalf("run failed: %v", res.Failure)
		}
		b.StopTimer()
		_ = os.RemoveAll(res.Dir) // keep the disk and the directory small
		b.StartTimer()
		return took
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			on += once(true)
			off += once(false)
		} else {
			off += once(false)
			on += once(true)
		}
	}
	total := float64(visits) * float64(b.N)
	b.ReportMetric(total/on.Seconds(), "visits/s")
	b.ReportMetric(float64(on.Nanoseconds())/total, "ns/visit")
	b.ReportMetric(float64(off.Nanoseconds())/total, "off-ns/visit")
	b.ReportMetric(100*(on.Seconds()/off.Seconds()-1), "journal-%")
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
		opts := Options{Drivers: map[string]Driver{"exec": noopDriver{}}, RunsDir: runs, WorkDir: runs, RunID: fmt.Sprintf("mem-%d", seq.Add(1))}
		res, err := Execute(context.Background(), p, opts)
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

// BenchmarkGuard evaluates a typical guard against a node environment.
func BenchmarkGuard(b *testing.B) {
	p := benchPlan(b, "g", `name: g
`+benchAgents+`nodes:
  - {id: verdict, agent: worker, prompt: x, output: {approved: boolean, remarks: [string]}}
  - id: pick
    choice:
      - when: verdict.ok && verdict.output.approved && len(verdict.output.remarks) < 3
        do: [{id: done, agent: worker, prompt: x}]
`)
	guard := p.Root.Nodes[1].Branches[0].When
	vars := map[string]any{"input": "", "verdict": map[string]any{"ok": true, "skipped": false, "error": noError,
		"output": map[string]any{"approved": true, "remarks": []any{"a", "b"}}}}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := evalBool(guard, vars); err != nil || !ok {
			b.Fatalf("guard: %v %v", ok, err)
		}
	}
}

// BenchmarkJournalAppend writes one end fact of a run node per iteration.
func BenchmarkJournalAppend(b *testing.B) {
	st, err := openStore(filepath.Join(benchRunsDir(b), "run"), false, false)
	if err != nil {
		b.Fatal(err)
	}
	defer st.close()
	ok := true
	f := &Fact{Type: "end", Time: time.Now(), Visit: "look[12]/check", Node: "check", OK: &ok,
		Output: map[string]any{"passed": true, "exit": 0, "report": "ok\n"}, WallMS: 3}
	row, err := st.begin(time.Now(), &flows.Node{ID: "check", Kind: schema.KindRun}, "look[12]/check", true)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := st.end(row, f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendFact encodes the end fact of a no-op agent visit, the
// most common line of a quick flow's journal.
func BenchmarkAppendFact(b *testing.B) {
	ok, one := true, int64(1)
	f := &Fact{Type: "end", Time: time.Now(), Visit: "look[12]/check", Node: "check", Kind: "agent", OK: &ok, Output: "ok",
		Usage: &Usage{Turns: &one}, Timeout: "30m0s", Attempts: 1, WallMS: 1}
	line := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		line, _ = appendFact(line[:0], f)
	}
}

// BenchmarkUsageJSON encodes usage.json for a loop of 1,000 iterations
// of one agent node, as a run writes it at its end.
func BenchmarkUsageJSON(b *testing.B) {
	one := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		book := newUsageBook(2)
		for i := range 1000 {
			book.add("again#"+strconv.Itoa(i+1)+"/work", "work", "worker", Usage{Turns: &one, WallMS: 1})
		}
		b.StartTimer()
		sp := &spool{w: io.Discard, b: make([]byte, 0, writeBuffer)}
		book.encode(sp)
		sp.write()
	}
}

// BenchmarkMapOutputJSON encodes the output of a map of 1,000 items of
// one agent node, as output.json holds it.
func BenchmarkMapOutputJSON(b *testing.B) {
	items := make([]any, 1000)
	for i := range items {
		value, _ := nodeValue(&outcome{output: "ok"})
		items[i] = map[string]any{"item": i, "ok": true, "output": value, "error": (*Failure)(nil).value()}
	}
	sp := &spool{w: io.Discard}
	b.ReportAllocs()
	for b.Loop() {
		if err := encodeOutput(sp, items); err != nil {
			b.Fatal(err)
		}
		sp.write()
	}
}

// BenchmarkJournalVisits journals the visits of a 1,000-node chain, from
// opening the run directory to closing it, and reports the time per visit:
// the journal's whole cost, without the engine around it.
func BenchmarkJournalVisits(b *testing.B) {
	runs := benchRunsDir(b)
	ok := true
	usage := &Usage{}
	nodes := make([]*flows.Node, 1000)
	for j := range nodes {
		nodes[j] = &flows.Node{ID: "n" + strconv.Itoa(j), Kind: schema.KindAgent}
	}
	for i := 0; b.Loop(); i++ {
		st, err := openStore(filepath.Join(runs, fmt.Sprint(i)), false, false)
		if err != nil {
			b.Fatal(err)
		}
		for j := range 1000 {
			visit := nodes[j].ID
			row, err := st.begin(time.Now(), nodes[j], visit, true)
			if err == nil {
				err = st.end(row, &Fact{Type: "end", Time: time.Now(), Visit: visit, Node: visit, Kind: "agent", OK: &ok, Output: "ok",
					Usage: usage, Timeout: "30m0s", Attempts: 1, WallMS: 1})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		st.seal()
		if err := st.close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/visit")
}

// BenchmarkReport renders report.html for a loop of 1,000 iterations of
// one agent node, as a run writes it at its end.
func BenchmarkReport(b *testing.B) {
	dir := b.TempDir()
	start := time.Now()
	one := int64(1)
	record := make([]reportRow, 0, 1001)
	record = append(record, reportRow{start: start, path: "again", kind: "loop",
		end: &Fact{Type: "end", Time: start.Add(10 * time.Millisecond), Visit: "again", Node: "again", Kind: "loop", OK: boolRef(true), WallMS: 10}})
	for i := range 1000 {
		t := start.Add(time.Duration(i) * 10 * time.Microsecond)
		path := "again#" + strconv.Itoa(i+1) + "/work"
		record = append(record, reportRow{start: t, path: path, kind: "agent",
			end: &Fact{Type: "end", Time: t.Add(8 * time.Microsecond), Visit: path, Node: "work", Kind: "agent", OK: boolRef(true), Output: "ok",
				Usage: &Usage{Turns: &one}, Timeout: "30m0s", Attempts: 1}})
	}
	info := &RunInfo{ID: "bench", Flow: "again", Status: "succeeded", Started: start, WallMS: 10}
	b.ReportAllocs()
	for b.Loop() {
		if err := renderReport(dir, info, record); err != nil {
			b.Fatal(err)
		}
	}
}
