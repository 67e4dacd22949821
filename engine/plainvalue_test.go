package engine_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	. "github.com/flowrun/flow/engine"
)

// TestNoEmptyErrorsInValuesShown: a map's items that succeeded carry no
// empty error object where they are read — an agent's reads, the run's
// output — while a failed item keeps its error, and expressions still
// read `.error.kind` of every item (empty when it succeeded).
func TestNoEmptyErrorsInValuesShown(t *testing.T) {
	p := load(t, "items", `name: items
`+agents+`nodes:
  - id: fan
    map: "[1, 2]"
    max: 2
    on_fail: continue
    do: [{id: w, agent: worker, prompt: p}]
  - id: pick
    choice:
      - when: all(filter(fan.output, .ok), .error.kind == "") && any(fan.output, .error.kind != "")
        do: [{id: check, agent: worker, reads: [fan.output], prompt: sum}]
  - id: last
    map: "[1]"
    max: 1
    do: [{id: x, agent: worker, prompt: p}]
`)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{answer: func(tn *Turn) (string, error) {
			if strings.Contains(tn.Visit, "fan[2]") {
				return "", errors.New("down")
			}
			return "fine", nil
		}}
		res, _ := executeOn(t, h, p, d, Options{})
		var read string
		for _, tn := range d.turns {
			if tn.Visit == "pick/check" {
				read = tn.Prompt
			}
		}
		if read == "" {
			t.Fatalf("check did not run: its guard reads every item's .error.kind")
		}
		if strings.Count(read, `"error"`) != 1 || !strings.Contains(read, `"ok": false`) || !strings.Contains(read, `"ok": true`) {
			t.Errorf("the read of the map should carry the failed item's error only:\n%s", read)
		}
		out, _ := json.Marshal(res.Output)
		if strings.Contains(string(out), `"error"`) {
			t.Errorf("the run's output carries an empty error: %s", out)
		}
	})
}
