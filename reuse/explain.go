package reuse

import (
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/flowrun/flow/flows"
)

// Placeholder is how `flow plan --reuse` stands in for the answer of a
// visit that will run: a later visit whose turn text holds it reads a
// visit that re-runs.
const Placeholder = "⟦flow plan: the answer of %s⟧"

// explainOrder is the order misses are explained in: the most telling
// difference first (a changed prompt also changes the node's definition).
var explainOrder = []string{flows.KeyPrompt, flows.KeyModel, flows.KeyAgent, flows.KeyDriver, flows.KeyTools,
	flows.KeySchema, flows.KeyMemory, flows.KeyIteration, flows.KeyCommand, flows.KeyWorkdir, flows.KeyRepeat, flows.KeyNode}

var partNames = map[string]string{
	flows.KeyNode: "the node's definition changed", flows.KeyAgent: "the agent file changed",
	flows.KeyDriver: "driver changed", flows.KeyTools: "tools changed", flows.KeySchema: "output schema changed",
	flows.KeyMemory: "an earlier visit of its memory scope changed", flows.KeyIteration: "a new loop iteration",
	flows.KeyCommand: "command changed", flows.KeyRepeat: "a new repeat",
	flows.KeyWorkdir: "the working directory's content changed",
}

// explain names the first input of the visit at path (key k, model) that
// differs from the nearest recorded visit, with a diff of the turn text
// when that is it.
func (s *Set) explain(path string, k *flows.VisitKey, model string) Miss {
	if k == nil {
		return Miss{Reason: "its node says reuse: never"}
	}
	h, ok := s.nearest(path)
	if !ok || h.fact.Key == nil {
		return Miss{Reason: "no recorded visit of this node"}
	}
	was := h.fact.Key
	for _, p := range explainOrder {
		if k.Parts[p] == was.Parts[p] {
			continue
		}
		switch p {
		case flows.KeyPrompt:
			return promptMiss(was.Prompt, k.Prompt)
		case flows.KeyModel:
			return Miss{Reason: fmt.Sprintf("model changed (recorded %q, now %q)", h.fact.Model, model)}
		}
		return Miss{Reason: partNames[p]}
	}
	return Miss{Reason: "no recorded visit has this key"}
}

// promptMiss says where the turn text first differs, as a diff of the
// lines around it; a line holding a Placeholder reads a visit that runs.
func promptMiss(was, now string) Miss {
	a, b := strings.Split(was, "\n"), strings.Split(now, "\n")
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i < len(b) {
		if visit, ok := reads(b[i]); ok {
			return Miss{Reason: fmt.Sprintf("reads `%s` which re-runs", visit)}
		}
	}
	reason := fmt.Sprintf("prompt changed at line %d", i+1)
	for j := i - 1; j >= 0; j-- { // name the read the line is under
		if h, ok := strings.CutPrefix(a[min(j, len(a)-1)], "## "); ok && j < len(a) && j < len(b) && a[j] == b[j] {
			reason += fmt.Sprintf(" (in the read of `%s`)", h)
			break
		}
	}
	// A real line diff (a unified diff of the two turn texts): only the
	// lines that differ are marked, with their context.
	d := string(diff.Diff("recorded", []byte(withNewline(was)), "now", []byte(withNewline(now))))
	if _, rest, ok := strings.Cut(d, "\n"); ok && strings.HasPrefix(d, "diff ") {
		d = rest // its "diff recorded now" line: the ---/+++ lines say it
	}
	return Miss{Reason: reason, Diff: strings.TrimRight(d, "\n")}
}

// withNewline ends s with a newline, so that a diff of two texts does not
// mark their last lines as differing only by one.
func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
