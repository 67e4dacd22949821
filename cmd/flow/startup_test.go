package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestOwnPackagesDoLittleInInit: flow's own packages, together, allocate
// at most 64 KiB in package init, which every flow process runs whatever
// the command (docs/performance.md, start-up). Compiling a regular
// expression with a counted repetition, or parsing a template, at package
// level breaks it: schema's event name pattern ({0,127}) alone allocated
// 118 KiB. Bytes, not time, so that a loaded machine does not fail it.
func TestOwnPackagesDoLittleInInit(t *testing.T) {
	cmd := exec.Command(flowBinary(t), "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow --version: %v\n%s", err, out)
	}
	const limit = 64 << 10
	total, per := 0, map[string]int{}
	for line := range strings.Lines(string(out)) {
		// init PKG @T ms, T ms clock, BYTES bytes, N allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," || !strings.HasPrefix(f[1], "github.com/flowrun/flow/") ||
			f[1] == "github.com/flowrun/flow/cmd/flow" { // this test binary's own package: its tests' variables
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("reading %q: %v", line, err)
		}
		per[f[1]] += n
		total += n
	}
	if len(per) == 0 {
		t.Fatalf("no init lines of flow's packages in:\n%s", out)
	}
	if total > limit {
		t.Errorf("flow's own packages allocate %d bytes in package init, over %d: %v", total, limit, per)
	}
	t.Logf("%d bytes: %v", total, per)
}
