package flows

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// BenchmarkLoad loads a generated flow of 1,000 nodes, each reading the one
// before it in its reads, a template and, every tenth node, a guard: the
// checker's scope and expression costs grow with the flow.
func BenchmarkLoad(b *testing.B) {
	const n = 1000
	var src strings.Builder
	src.WriteString(`name: big
agents:
  - {name: worker, description: does work, driver: exec, command: [w]}
nodes:
  - {id: n0, agent: worker, prompt: start}
`)
	for i := 1; i < n; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&src, "  - id: n%d\n    choice:\n      - when: n%d.ok && n%d.output != \"\"\n        do: [{id: c%d, run: [make, \"${{ n%d.output }}\"]}]\n", i, i-1, i-1, i, i-1)
			continue
		}
		prev := i - 1
		if prev%10 == 0 && prev > 0 {
			prev-- // a choice's output is the branch's run output; read the agent before it
		}
		fmt.Fprintf(&src, "  - {id: n%d, agent: worker, reads: [n%d], prompt: \"step %d after ${{ n%d.output }}\"}\n", i, prev, i, prev)
	}
	file := filepath.Join(b.TempDir(), "big.yaml")
	data := []byte(src.String())
	opts := Options{Disk: osdisk.OS, UserAgentDirs: []string{}}
	if _, diags := LoadSource(file, data, opts); diags.HasErrors() {
		b.Fatalf("load:\n%s", diags.Error())
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, diags := LoadSource(file, data, opts); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}
