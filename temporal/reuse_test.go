package temporal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
)

// TestReusedVisitsAreCheckedAsPayloads: the recorded visits a run on
// Temporal reuses travel compressed in its input, where the codec cannot
// see into them, so without a key they are checked before: a secret this
// process knows refuses the run, and a secret's shape is masked; with a
// key they are kept as recorded and the input is sealed like every
// payload. Past the bound, the run is refused, saying how to reuse less.
func TestReusedVisitsAreCheckedAsPayloads(t *testing.T) {
	const known = "sk-the-known-secret-value-0123456789"
	token := "ghp_" + strings.Repeat("aB3dE5fG7h", 4)[:36]
	visits := map[string]ReusedVisit{
		"k1": {Run: "r1", Visit: "a", Output: "the token " + token},
		"k2": {Run: "r1", Visit: "b", Output: "it said " + known},
	}
	var refused *engine.RefusedError
	if _, err := packReused(visits, secret.New(known)); !errors.As(err, &refused) || !strings.Contains(err.Error(), "temporal.key") {
		t.Errorf("a known secret in a reused answer without a key: %v, want a refusal naming temporal.key", err)
	}
	delete(visits, "k2")
	blob, err := packReused(visits, secret.New(known))
	if err != nil {
		t.Fatal(err)
	}
	back, err := unpackReused(blob)
	if err != nil || back["k1"].Visit != "a" {
		t.Fatalf("unpacked %v, %v", back, err)
	}
	if got := back["k1"].Output.(string); strings.Contains(got, token) || !strings.HasPrefix(got, "the token ") {
		t.Errorf("without a key, a token's shape travels as %q", got)
	}

	visits["k2"] = ReusedVisit{Run: "r1", Visit: "b", Output: "it said " + known}
	if blob, err = packReused(visits, nil); err != nil {
		t.Fatal(err)
	}
	if back, _ = unpackReused(blob); back["k1"].Output != "the token "+token || back["k2"].Output != "it said "+known {
		t.Errorf("with a key the answers are not kept as recorded: %v", back)
	}
	p, err := in(testKey(t, "0123456789abcdef"), "run-1").ToPayload(&RunInput{Reused: blob})
	if err != nil || string(p.Metadata[converter.MetadataEncoding]) != encodingEncrypted {
		t.Errorf("the run's input with reused visits is not sealed: %v, %v", p, err)
	}

	noise := make([]byte, maxReused)
	_, _ = rand.Read(noise)
	big := map[string]ReusedVisit{"k": {Visit: "huge", Output: base64.StdEncoding.EncodeToString(noise)}}
	if _, err := packReused(big, nil); !errors.As(err, &refused) || !strings.Contains(err.Error(), "--reuse=RUN") {
		t.Errorf("recorded visits past the bound: %v, want a refusal saying how to reuse less", err)
	}
}

// TestWorkflowAnswersReusedVisitsWithoutActivities: a run whose input
// carries recorded visits by key answers those in the workflow — no
// activity, no driver turn — and journals them reused; the visit whose
// prompt changed, and the one that reads it, run as activities.
func TestWorkflowAnswersReusedVisitsWithoutActivities(t *testing.T) {
	flow := func(b string) string {
		return "name: f\n" + testAgents + "nodes:\n  - {id: a, agent: worker, prompt: alpha}\n  - {id: b, agent: worker, prompt: " + b +
			"}\n  - {id: c, agent: worker, prompt: gamma, reads: [b]}\n  - {id: t, run: [echo, hi], reuse: true}\n"
	}
	first := newHarness(t, &scripted{})
	_, facts := first.run(flow("beta"), nil)
	visits := map[string]ReusedVisit{}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Key != nil {
			visits[f.Key.Key] = ReusedVisit{Run: "run-0", Visit: f.Visit, Output: "recorded " + f.Visit, Saved: f.Usage}
		}
	}
	blob, err := packReused(visits, nil)
	if err != nil {
		t.Fatal(err)
	}
	// b answers otherwise now: c, which reads it, runs again too.
	d := &scripted{script: func(visit string, _ int) (string, error) { return "now " + visit, nil }}
	h := newHarness(t, d)
	h.reused = blob
	out, facts := h.run(flow("beta two"), nil)
	if !out.OK {
		t.Fatalf("the run ended %+v", out)
	}
	if d.attempts["a"] != 0 || d.attempts["b"] != 1 || d.attempts["c"] != 1 {
		t.Errorf("turns run: %v; want b and c, not a", d.attempts)
	}
	for _, f := range facts {
		if f.Type != record.FactEnd || f.Visit == "" {
			continue
		}
		reused := f.Reused != nil && f.Reused.Run == "run-0" && f.Reused.Visit == f.Visit
		switch f.Visit {
		case "a":
			if !reused || f.Output != "recorded a" || f.Worker != "" {
				t.Errorf("a: %+v; want reused from run-0/a with the recorded answer, on no worker", f)
			}
		case "b", "c":
			if reused || f.Worker != "w1" {
				t.Errorf("%s: %+v; want it run on the worker", f.Visit, f)
			}
		case "t":
			// reuse: true keys by the working directory's content, which
			// the workflow cannot read: it runs again.
			if reused {
				t.Errorf("t was reused on Temporal: %+v", f)
			}
		}
	}
	for _, q := range h.queues {
		if q == "" {
			t.Errorf("an activity without a queue: %v", h.queues)
		}
	}
	if len(h.queues) != 3 {
		t.Errorf("%d activities (%v); want b, c and t", len(h.queues), h.queues)
	}
}
