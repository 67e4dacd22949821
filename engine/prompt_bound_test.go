package engine_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/schema"
)

// nestedLists is a value of lists nested depth deep: [[[…]]].
func nestedLists(depth int) any {
	var v any = []any{}
	for range depth {
		v = []any{v}
	}
	return v
}

// A small input of deeply nested lists that an agent reads makes a prompt
// of about its own size (issue 23: 20 KB became a 200 MB turn, as the read
// was indented two bytes per level on every line). Measured: the whole run
// allocates a few MB (it was some hundreds).
func TestNestedReadIsLinear(t *testing.T) {
	p := load(t, "nested", `name: nested
input: {v: any}
agents:
  - {name: worker, description: reads, driver: exec, command: [w]}
nodes:
  - {id: look, agent: worker, prompt: Look., reads: [input.v]}
`)
	in := nestedLists(5000)
	raw, _ := json.Marshal(in)
	onHosts(t, func(t *testing.T, h host) {
		d := &fakeDriver{}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, _ := executeOn(t, h, p, d, Options{Input: map[string]any{"v": in}})
		runtime.ReadMemStats(&after)
		if !res.OK {
			t.Fatalf("run failed: %v", res.Failure)
		}
		if len(d.turns) != 1 {
			t.Fatalf("%d turns, want 1", len(d.turns))
		}
		prompt := len(d.turns[0].Prompt)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("input %d bytes of JSON: prompt %d bytes, the run allocated %d MB", len(raw), prompt, alloc>>20)
		if prompt > 4*len(raw)+4096 {
			t.Errorf("the prompt is %d bytes for a %d-byte input", prompt, len(raw))
		}
		if alloc > 64<<20 {
			t.Errorf("the run allocated %d MB for a %d-byte input", alloc>>20, len(raw))
		}
	})
}

// A value shallow enough is still indented for the model to read.
func TestShallowReadIsIndented(t *testing.T) {
	if got := JSONFence(map[string]any{"a": []any{1, 2}}); !strings.Contains(got, "\n  \"a\": [\n    1,") {
		t.Errorf("jsonFence = %q, want it indented", got)
	}
}

// A turn's prompt is bounded by limits.prompt_bytes: a read past it is
// refused, naming the node and the read, and no turn is sent.
func TestPromptIsBounded(t *testing.T) {
	src := `name: big
input: {v: string, w: string}
agents:
  - {name: worker, description: reads, driver: exec, command: [w]}
nodes:
  - {id: look, agent: worker, prompt: "Look at ${{ input.w }}.", reads: [input.v]}
`
	p := load(t, "big", src)
	onHosts(t, func(t *testing.T, h host) {
		for _, c := range []struct {
			v, w  string
			limit int
			part  string
		}{
			{v: strings.Repeat("x", 2<<20), part: "the read input.v renders 2097152 bytes", limit: 1 << 20},
			{w: strings.Repeat("y", 2<<20), part: "its prompt template renders 2097161 bytes", limit: 1 << 20},
			{v: strings.Repeat("x", 2000), part: "the read input.v", limit: 1000},
		} {
			p.Limits = schema.Limits{PromptBytes: c.limit}
			if c.limit == 1<<20 {
				p.Limits = schema.Limits{} // the default
			}
			d := &fakeDriver{}
			res, _ := executeOn(t, h, p, d, Options{Input: map[string]any{"v": c.v, "w": c.w}})
			if res.OK || res.Failure.Root().Kind != schema.FailRefused {
				t.Fatalf("want a refused failure, got %+v", res.Failure)
			}
			msg := res.Failure.Root().Message
			for _, want := range []string{"look", c.part, "limits.prompt_bytes"} {
				if !strings.Contains(msg, want) {
					t.Errorf("failure %q does not say %q", msg, want)
				}
			}
			if len(d.turns) != 0 {
				t.Errorf("%d turns were sent", len(d.turns))
			}
		}
	})
}
