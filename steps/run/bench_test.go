package run

import (
	"context"
	"os/exec"
	"testing"

	"github.com/flowrun/flow/engine"
)

// BenchmarkRunTrue is a run node's whole cost for `true`: spawn, wait,
// output log and report. Compare with BenchmarkExecTrue, the floor.
func BenchmarkRunTrue(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := New()
	cmd := &engine.Command{
		RunID:    "bench",
		Visit:    "true",
		Argv:     []string{"true"},
		Home:     b.TempDir(),
		Progress: func(engine.Progress) {},
	}
	for b.Loop() {
		res, err := c.Run(ctx, cmd)
		if err != nil || !res.Passed {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
}

// BenchmarkExecTrue is raw os/exec running `true`.
func BenchmarkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
