package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/rundir"
)

// schedule runs the scheduler for d of the bubble's clock, then shuts the
// runs down and returns serve.jsonl.
func (b *booted) schedule(t *testing.T, d time.Duration) []Record {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { b.sched.loop(ctx) })
	time.Sleep(d)
	cancel()
	wg.Wait()
	b.runs.shutdown()
	return b.records(t)
}

func TestScheduleFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := boot(t, map[string]string{"tick.yaml": `name: tick
schedule: {cron: "@every 2s"}
nodes: [{id: hello, run: [echo, hi]}]
`}, nil)
		start := time.Now()
		recs := b.schedule(t, 7500*time.Millisecond)
		var at []time.Duration
		for _, r := range recs {
			if r.Type == RecordFire {
				at = append(at, r.At.Sub(start))
			}
		}
		want := []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second}
		if len(at) != len(want) {
			t.Fatalf("fires at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("fires at %v, want %v", at, want)
			}
		}
		if n := count(recs, RecordRun, "tick"); n != 3 {
			t.Fatalf("%d runs recorded, want 3", n)
		}
	})
}

func TestOverlap(t *testing.T) {
	const flow = `name: slow
schedule: {cron: "@every 1s", overlap: %s}
nodes: [{id: work, run: [sleep, "3.3"]}]
`
	// Fires at 1, 2, …, 10 s; each run sleeps 3.3 s (no ties with a fire).
	tests := []struct {
		overlap     string
		most        int // runs alive at once
		runs, skips int
	}{
		// runs at 1, 5, 9; skips at 2-4, 6-8, 10
		{overlap: "skip", most: 1, runs: 3, skips: 7},
		// runs at 1, 4.3 (the fire of 2, queued), 7.6 (of 5); skips at 3, 4,
		// 6, 7, 9, 10, and the fire of 8, which waited, at shutdown
		{overlap: "queue", most: 1, runs: 3, skips: 7},
		{overlap: "allow", most: 4, runs: 10, skips: 0},
	}
	for _, tt := range tests {
		t.Run(tt.overlap, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := boot(t, map[string]string{"slow.yaml": fmt.Sprintf(flow, tt.overlap)}, func(c *Config) { c.MaxRuns = 10 })
				recs := b.schedule(t, 10500*time.Millisecond)
				if got := b.cmds.most(); got != tt.most {
					t.Errorf("at most %d runs at once, want %d", got, tt.most)
				}
				if got := count(recs, RecordRun, "slow"); got != tt.runs {
					t.Errorf("%d runs, want %d", got, tt.runs)
				}
				if got := count(recs, RecordSkip, "slow"); got != tt.skips {
					t.Errorf("%d skips recorded, want %d", got, tt.skips)
				}
				if tt.skips > 0 && len(b.sched.recentFires("slow")) == 0 {
					t.Error("the page has no fires to show")
				}
			})
		})
	}
}

func TestCatchup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The last server fired both an hour ago; each missed five fires.
		last := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		b := boot(t, map[string]string{
			"once.yaml":         "name: once\nschedule: {cron: \"@every 10m\", catchup: once}\nnodes: [{id: x, run: [echo]}]\n",
			"none.yaml":         "name: none\nschedule: {cron: \"@every 10m\"}\nnodes: [{id: x, run: [echo]}]\n",
			"fresh.yaml":        "name: fresh\nschedule: {cron: \"@every 10m\", catchup: once}\nnodes: [{id: x, run: [echo]}]\n",
			".flow/serve.jsonl": `{"type":"fire","flow":"once","at":"` + last + `"}` + "\n" + `{"type":"fire","flow":"none","at":"` + last + `"}` + "\n",
		}, nil)
		b.sched.catchup(b.past.lastFire, time.Now())
		b.runs.shutdown()
		recs := b.records(t)
		if n := count(recs, RecordRun, "once"); n != 1 {
			t.Errorf("catchup: once made %d runs, want 1", n)
		}
		if n := count(recs, RecordRun, "none") + count(recs, RecordRun, "fresh"); n != 0 {
			t.Errorf("catchup: none, or a flow never fired before, made %d runs, want 0", n)
		}
	})
}

func TestServerWideCapQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		flow := "name: %s\nschedule: {cron: \"@every 1s\", overlap: allow}\nnodes: [{id: work, run: [sleep, \"3.3\"]}]\n"
		b := boot(t, map[string]string{"a.yaml": fmt.Sprintf(flow, "a"), "b.yaml": fmt.Sprintf(flow, "b")},
			func(c *Config) { c.MaxRuns = 1 })
		ctx, cancel := context.WithCancel(context.Background())
		var wg conc.WaitGroup
		wg.Go(func() { b.sched.loop(ctx) })
		time.Sleep(5500 * time.Millisecond)
		_, queue := b.runs.snapshot()
		if len(queue) != 8 { // 10 fires; one ran 1-4.3 s, one runs since
			t.Errorf("%d runs queued, want 8", len(queue))
		}
		cancel()
		wg.Wait()
		b.runs.shutdown()
		if got := b.cmds.most(); got != 1 {
			t.Errorf("%d runs at once under a cap of 1", got)
		}
		if n := count(b.records(t), RecordRun, ""); n != 2 {
			t.Errorf("%d runs started, want 2 (at 1 s and 4.3 s)", n)
		}
	})
}

// TestReloadKeepsRunningSnapshot changes a flow file while its run goes on:
// the run keeps the plan it started with, the next run takes the new one,
// and a file that breaks is reported and skipped.
func TestReloadKeepsRunningSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := boot(t, map[string]string{"v.yaml": "name: v\ndescription: one\nnodes: [{id: work, run: [sleep, \"2\"]}]\n"}, nil)
		first := b.catalog.get("v")
		if _, err := b.runs.submit(&job{id: "run-1", flow: "v", plan: first.Plan}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		file := filepath.Join(b.cfg.Dir, "v.yaml")
		if err := os.WriteFile(file, []byte("name: v\ndescription: two\nnodes: [{id: work, run: [echo]}]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.cfg.Dir, "bad.yaml"), []byte("name: bad\nnodes: 3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		changed, err := b.reload()
		if err != nil || len(changed) != 2 {
			t.Fatalf("reload: %v, changed %d, want 2", err, len(changed))
		}
		if e := b.catalog.get("bad"); e == nil || !e.Broken() {
			t.Fatal("the broken file should be in the catalogue as broken")
		}
		if got := b.catalog.get("v").Plan.Root.Doc.Description.Value; got != "two" {
			t.Fatalf("the catalogue has %q, want the new file", got)
		}
		time.Sleep(2 * time.Second)
		snap, err := rundir.ReadSnapshot(filepath.Join(b.cfg.RunsDir, "run-1"))
		if err != nil {
			t.Fatal(err)
		}
		if src := snap.Flows["v"].Source; !strings.Contains(src, "description: one") {
			t.Fatalf("the running run should keep its snapshot, has:\n%s", src)
		}
		if n := count(b.records(t), RecordBroken, "bad"); n != 1 {
			t.Fatalf("the broken file should be recorded once, got %d", n)
		}
	})
}
