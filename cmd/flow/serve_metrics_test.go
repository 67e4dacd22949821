package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flowrun/flow/rundir"
)

// meteredServeFlow is a one-turn flow whose exec agent runs script after
// reading its prompt; extra goes after the name (a budget).
func meteredServeFlow(name, extra, script string) string {
	return "name: " + name + "\n" + extra + "agents:\n  - {name: worker, description: works, driver: exec, command: [sh, -c, '" +
		"cat >/dev/null; " + script + "']}\nnodes:\n  - {id: turn, agent: worker, prompt: go}\n"
}

// TestServeMetricsTokensEqualTheJournals, through the real binary: after
// runs that succeeded, failed, were stopped by a budget and were stopped
// over the API — each reporting input, output and cache tokens as it went
// — the token counters of /metrics are, type by type, the sums of the
// runs' journals.
func TestServeMetricsTokensEqualTheJournals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	usage := func(id string, in, out, cr, cw int) string {
		return `echo "FLOW_USAGE {\"id\":\"` + id + `\",\"input\":` + strconv.Itoa(in) + `,\"output\":` + strconv.Itoa(out) +
			`,\"cache_read\":` + strconv.Itoa(cr) + `,\"cache_write\":` + strconv.Itoa(cw) + `}" >&2; `
	}
	writeFlows(t, dir, map[string]string{
		"good.yaml":    meteredServeFlow("good", "", usage("a", 700, 100, 150, 50)+"echo done"),
		"bad.yaml":     meteredServeFlow("bad", "", usage("a", 150, 20, 20, 10)+"exit 3"),
		"greedy.yaml":  meteredServeFlow("greedy", "budget: {tokens: 1500}\n", usage("a", 800, 50, 40, 10)+"sleep 0.3; "+usage("b", 800, 50, 40, 10)+"sleep 30; echo late"),
		"stopped.yaml": meteredServeFlow("stopped", "", usage("a", 200, 50, 40, 10)+"sleep 4545.7; echo late"),
	})
	s := startServe(t, flowBinary(t), dir)
	var ids []string
	for flow, status := range map[string]string{"good": "succeeded", "bad": "failed", "greedy": "failed"} {
		_, m := s.call("POST", "/api/flows/"+flow+"/runs", "")
		id, _ := m["id"].(string)
		await(t, 20*time.Second, "the run of "+flow+" to be "+status, func() bool { return runStatus(s, id) == status })
		ids = append(ids, id)
		if flow == "good" {
			// The API and the run page give the journal's figure: input,
			// output and cache, 1,000.
			_, v := s.call("GET", "/api/runs/"+id, "")
			u, _ := v["usage"].(map[string]any)
			if u["input"] != 700.0 || u["cache_read"] != 150.0 || u["cache_write"] != 50.0 {
				t.Errorf("the API gives the usage %v", v["usage"])
			}
			if _, page := s.call("GET", "/runs/"+id, ""); !strings.Contains(page["_body"].(string), "1000 tokens") {
				t.Errorf("the run page does not say 1000 tokens")
			}
		}
	}
	_, m := s.call("POST", "/api/flows/stopped/runs", "")
	id, _ := m["id"].(string)
	await(t, 20*time.Second, "the stopped flow's turn to report its usage", func() bool {
		_, m := s.call("GET", "/api/runs/"+id, "")
		live, _ := m["live"].([]any)
		return len(live) == 1 && live[0].(map[string]any)["tokens"] != nil
	})
	if code, m := s.call("POST", "/api/runs/"+id+"/stop", ""); code != 200 || m["status"] != "stopped" {
		t.Fatalf("stop: %d %v", code, m)
	}
	ids = append(ids, id)

	want := map[string]float64{}
	for _, id := range ids {
		facts, err := rundir.ReadJournal(filepath.Join(dir, ".flow", "runs", id))
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
	if want["input"] < 700+150+800+200 || want["cache_write"] < 50+10+10+10 {
		t.Errorf("the journals hold too little: %v", want)
	}
	_, m = s.call("GET", "/metrics", "")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(m["_body"].(string)))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
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
	t.Logf("journals and /metrics: %v", want)
	s.sigterm()
}
