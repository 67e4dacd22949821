package serve

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// meteredDriver streams a turn's tokens by its prompt: "ok" completes at
// 1,000, "fail" fails after 200, "big" would stream 100,000 (a budget
// stops it), "hang" streams 300 and waits to be stopped. Every turn
// returns what it spent, however it ended.
type meteredDriver struct{ hanging atomic.Int32 }

func (d *meteredDriver) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	size := map[string]int64{"ok": 1000, "fail": 200, "big": 100000, "hang": 300}[strings.Fields(t.Prompt)[0]]
	var tok int64
	result := func(st engine.TurnStatus) *engine.TurnResult {
		// Part of it read from and written to the cache: /metrics counts
		// those too, as the journals do.
		in, out, cr := tok*7/10, tok/10, tok/10
		cw := tok - in - out - cr
		return &engine.TurnResult{Status: st, Output: "ok", Usage: record.Usage{Input: &in, Output: &out, CacheRead: &cr, CacheWrite: &cw}}
	}
	for tok < size {
		select {
		case <-ctx.Done():
			return result(engine.Aborted), context.Cause(ctx)
		case <-time.After(2 * time.Millisecond):
		}
		tok += 100
		t.Progress(engine.Progress{Activity: "writing", Tokens: tok})
	}
	switch {
	case strings.HasPrefix(t.Prompt, "fail"):
		r := result(engine.Failed)
		r.Diagnostics = []string{"the model said no"}
		return r, nil
	case strings.HasPrefix(t.Prompt, "hang"):
		d.hanging.Add(1)
		<-ctx.Done()
		return result(engine.Aborted), context.Cause(ctx)
	}
	return result(engine.Completed), nil
}

func meteredFlow(name, prompt, extra string) string {
	return "name: " + name + "\n" + extra + "agents:\n  - {name: worker, description: works, driver: exec, command: [x]}\n" +
		"nodes:\n  - {id: turn, agent: worker, prompt: " + prompt + "}\n"
}

// TestMetricsTokensEqualTheJournals: after runs that succeeded, failed,
// were stopped by a budget and were stopped over the API, the token
// counters of /metrics are the sums of the runs' journals.
func TestMetricsTokensEqualTheJournals(t *testing.T) {
	d := &meteredDriver{}
	b, c := serveHTTP(t, map[string]string{
		"good.yaml":    meteredFlow("good", "ok", ""),
		"bad.yaml":     meteredFlow("bad", "fail", ""),
		"greedy.yaml":  meteredFlow("greedy", "big", "budget: {tokens: 2500}\n"),
		"stopped.yaml": meteredFlow("stopped", "hang", ""),
	}, func(cfg *Config) { cfg.Host.Drivers = map[string]engine.Driver{"exec": d} })
	var ids []string
	for flow, status := range map[string]string{"good": "succeeded", "bad": "failed", "greedy": "failed"} {
		_, m, _ := c.do("POST", "/api/flows/"+flow+"/runs", "")
		id := m["id"].(string)
		v := c.waitRun(id, status)
		ids = append(ids, id)
		// The API says the overshoot of the greedy run's budget.
		over, _ := v["overspend"].([]any)
		if (flow == "greedy") != (len(over) == 1) {
			t.Errorf("run of %s: overspend %v", flow, v["overspend"])
		}
		if _, m, _ := c.do("GET", "/runs/"+id, ""); (flow == "greedy") != strings.Contains(m["_body"].(string), "data-overspend") {
			t.Errorf("the page of the run of %s does not say its overspend right", flow)
		}
	}
	_, m, _ := c.do("POST", "/api/flows/stopped/runs", "")
	id := m["id"].(string)
	deadline := time.Now().Add(5 * time.Second)
	for d.hanging.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code, m, _ := c.do("POST", "/api/runs/"+id+"/stop", ""); code != 200 || m["status"] != "stopped" {
		t.Fatalf("stop: %d %v", code, m)
	}
	ids = append(ids, id)

	want := map[string]float64{}
	for _, id := range ids {
		facts, err := rundir.ReadJournal(runDirOf(b, id))
		if err != nil {
			t.Fatal(err)
		}
		tot := rundir.Tally(facts).Total
		if tot.Tokens() == 0 {
			t.Errorf("run %s recorded no tokens", id)
		}
		for typ, n := range map[string]*int64{"input": tot.Input, "output": tot.Output, "cache_read": tot.CacheRead, "cache_write": tot.CacheWrite} {
			if n != nil {
				want[typ] += float64(*n)
			}
		}
	}
	_, m, _ = c.do("GET", "/metrics", "")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(m["_body"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mt := range fams["flow_tokens_total"].GetMetric() {
		for _, l := range mt.GetLabel() {
			if l.GetName() == "type" {
				got[l.GetValue()] += mt.GetCounter().GetValue()
			}
		}
	}
	for _, typ := range []string{"input", "output", "cache_read", "cache_write"} {
		if got[typ] != want[typ] {
			t.Errorf("/metrics counts %v %s tokens, the journals %v", got[typ], typ, want[typ])
		}
	}
	for typ := range got {
		if _, known := want[typ]; !known && got[typ] != 0 {
			t.Errorf("/metrics counts %v tokens of type %q, which the journals do not hold", got[typ], typ)
		}
	}
	if want["input"]+want["output"]+want["cache_read"]+want["cache_write"] < 1000+200+2500+300 || want["cache_write"] == 0 {
		t.Errorf("the journals hold too little: %v", want)
	}
}
