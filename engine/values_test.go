package engine_test

import (
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
)

// TestValuesOfTopLevelNodes: a finished run leaves each top-level node's
// value, blocks included, for a sweep's score to read back.
func TestValuesOfTopLevelNodes(t *testing.T) {
	p := load(t, "vals", `name: vals
`+agents+`nodes:
  - id: review
    loop: {until: "verdict.output == 'ok review#1/verdict'", max: 2}
    do:
      - {id: verdict, agent: judge, prompt: p}
  - {id: tests, run: [go, test]}
`)
	onHosts(t, func(t *testing.T, h host) {
		res, _ := executeOn(t, h, p, &fakeDriver{}, Options{})
		v := valuesOf(t, res)
		review, _ := v["review"].(map[string]any)
		out, _ := review["output"].(map[string]any)
		if review["ok"] != true || out["converged"] != true || out["iterations"] != 1.0 {
			t.Errorf("review's value: %v", v["review"])
		}
		tests, _ := v["tests"].(map[string]any)
		if to, _ := tests["output"].(map[string]any); to["passed"] != true {
			t.Errorf("tests' value: %v", v["tests"])
		}
		if _, ok := v["input"]; !ok {
			t.Errorf("no input in %v", v)
		}
	})
}

// TestSharedLiveCap: runs given one Live semaphore share its cap.
func TestSharedLiveCap(t *testing.T) {
	p := load(t, "wide", `name: wide
`+agents+`nodes:
  - id: fan
    map: "[1, 2, 3, 4]"
    max: 4
    concurrency: 4
    do: [{id: w, agent: worker, prompt: p}]
`)
	d := &fakeDriver{delay: 20 * time.Millisecond}
	live := local.Runtime{}.NewSemaphore(1)
	execute(t, p, d, Options{Live: live, Concurrency: 4})
	if m := d.maxLive.Load(); m != 1 {
		t.Errorf("%d turns were alive at once under a shared cap of 1", m)
	}
}
