package flows

import (
	"fmt"
	"testing"
)

func keyNode() *Node {
	n := &Node{ID: "review", Kind: "agent", Spec: &AgentNode{Prompt: &Template{Source: "Review ${{ x }}"}, Agent: &Agent{Name: "r", Driver: "exec", Instructions: "be brief"}}}
	computeStatic("f", n)
	return n
}

// TestVisitKeyIgnoresRunAndPosition: the run directory, the working
// directory and a map item's index never change a key; a loop's
// iteration, a sweep's repeat and the memory chain do.
func TestVisitKeyIgnoresRunAndPosition(t *testing.T) {
	n := keyNode()
	a := n.Key(KeyInput{Path: "m[1]/review", Prompt: "Review 1\n\nWorking directory: /tmp/a\n", Roots: map[string]string{"/tmp/a": "<workdir>"}})
	b := n.Key(KeyInput{Path: "m[7]/review", Prompt: "Review 1\n\nWorking directory: /srv/b\n", Roots: map[string]string{"/srv/b": "<workdir>"}})
	if a.Key != b.Key {
		t.Errorf("the working directory or an item index changed the key:\n%v\n%v", a.Parts, b.Parts)
	}
	for name, in := range map[string]KeyInput{
		"iteration": {Path: "l#2/review", Prompt: "Review 1\n\nWorking directory: <workdir>\n"},
		"repeat":    {Path: "m[1]/review", Repeat: 2, Prompt: "Review 1\n\nWorking directory: <workdir>\n"},
		"memory":    {Path: "m[1]/review", Chain: "abc", Prompt: "Review 1\n\nWorking directory: <workdir>\n"},
		"prompt":    {Path: "m[1]/review", Prompt: "Review 2\n\nWorking directory: <workdir>\n"},
		"model":     {Path: "m[1]/review", Model: "big", Prompt: "Review 1\n\nWorking directory: <workdir>\n"},
	} {
		if k := n.Key(in); k.Key == a.Key {
			t.Errorf("%s did not change the key", name)
		}
	}
	if got := iterations("a#2/b[3]/c#10/d"); got != "2/10" {
		t.Errorf("iterations = %q", got)
	}
}

// BenchmarkVisitKeys computes the keys of a 1,000-node flow's visits:
// under 1 ms a visit is the bound (docs/reuse-and-tests.md).
func BenchmarkVisitKeys(b *testing.B) {
	nodes := make([]*Node, 1000)
	for i := range nodes {
		nodes[i] = &Node{ID: fmt.Sprintf("n%d", i), Kind: "agent", Spec: &AgentNode{Prompt: &Template{Source: "Do ${{ input }}"}, Agent: &Agent{Name: "a", Driver: "exec", Instructions: "x"}}}
		computeStatic("f", nodes[i])
	}
	prompt := fmt.Sprintf("%01000d\n\nWorking directory: /w\n", 0)
	roots := map[string]string{"/w": "<workdir>", "/w/.flow/runs/r": "<run>"}
	b.ResetTimer()
	for range b.N {
		for _, n := range nodes {
			n.Key(KeyInput{Path: n.ID, Prompt: prompt, Roots: roots})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(nodes)), "ns/visit")
}

// TestVisitKeysFast holds keys to under 1 ms a visit over a 1,000-node
// flow (measured: about 20 µs), with room for a loaded machine.
func TestVisitKeysFast(t *testing.T) {
	r := testing.Benchmark(func(b *testing.B) {
		nodes := make([]*Node, 1000)
		for i := range nodes {
			nodes[i] = &Node{ID: fmt.Sprintf("n%d", i), Kind: "agent", Spec: &AgentNode{Prompt: &Template{Source: "Do ${{ input }}"}, Agent: &Agent{Name: "a", Driver: "exec", Instructions: "x"}}}
			computeStatic("f", nodes[i])
		}
		prompt := fmt.Sprintf("%04000d\n\nWorking directory: /w\n", 0)
		b.ResetTimer()
		for range b.N {
			for _, n := range nodes {
				n.Key(KeyInput{Path: "m[3]/" + n.ID + "#2", Prompt: prompt, Roots: map[string]string{"/w": "<workdir>"}})
			}
		}
	})
	if per := r.NsPerOp() / 1000; per > 1e6 {
		t.Errorf("a visit key took %d ns, more than 1 ms", per)
	}
}
