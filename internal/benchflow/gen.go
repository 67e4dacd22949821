package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The generators write the benchmark flows as YAML text, the way a person
// would: the loader and engine see ordinary files.

// chainFlow is a flow named name of n `run: ["true"]` nodes in a row.
func chainFlow(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: %d processes of true in a row (benchflow).\nnodes:\n", name, n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: n%d\n    run: [\"true\"]\n", i)
	}
	return b.String()
}

// mapFlow is a flow named name of one map over 1..n whose body is one
// `run: ["true"]`, k items at a time.
func mapFlow(name string, n, k int) string {
	return fmt.Sprintf(`name: %s
description: %d processes of true, %d at a time (benchflow).
nodes:
  - id: each
    map: "1..%d"
    max: %d
    concurrency: %d
    do:
      - id: t
        run: ["true"]
`, name, n, k, n, n, k)
}

// largeFlow is a flow named name of about n nodes (n rounded up to a
// multiple of 10) for `flow validate`: run nodes whose argv and env embed
// ${{ }} templates reading earlier nodes, and choices whose guards read
// them, so the checker resolves and type-checks thousands of addresses.
// No agents: it loads without any agent catalogue.
func largeFlow(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: %d nodes of runs and guards (benchflow).\nnodes:\n", name, n)
	for blk := 0; blk*10 < n; blk++ {
		s := func(i int) string { return fmt.Sprintf("s%d_%d", blk, i) }
		// Seven run nodes: plain, then templated argv and env.
		fmt.Fprintf(&b, "  - id: %s\n    run: [\"true\"]\n", s(1))
		for i := 2; i <= 7; i++ {
			fmt.Fprintf(&b, "  - id: %s\n    run: [echo, \"${{ %s.output.exit }}\", \"${{ %s.ok }}\"]\n", s(i), s(i-1), s(1))
			if i%3 == 0 {
				fmt.Fprintf(&b, "    env: {PREV: \"${{ %s.output.report }}\"}\n    timeout: 30s\n", s(i-2))
			}
		}
		// A choice (the eighth node) with a branch each way: ten ids a block.
		prev := "true"
		if blk > 0 {
			prev = fmt.Sprintf("c%d.ok", blk-1)
		}
		fmt.Fprintf(&b, `  - id: c%[1]d
    choice:
      - when: "%[2]s.output.passed && %[3]s.output.exit == 0 && %[4]s"
        do:
          - id: c%[1]d_yes
            run: [echo, "${{ %[5]s.output.report }}"]
      - else:
          - id: c%[1]d_no
            run: "test ${{ %[2]s.output.exit }} -eq 0"
`, blk, s(7), s(6), prev, s(5))
	}
	return b.String()
}

// earlierRuns makes the working directory of the --reuse workload under
// tmp: one.yaml (one `run: ["true"]` node) and other.yaml, n/2 runs of
// the first and then n - n/2 of the other, so that the run --reuse reuses
// is behind the other flow's runs.
func earlierRuns(ctx context.Context, flowBin, tmp string, env []string, n int) (string, error) {
	wd := filepath.Join(tmp, "reuse")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"one", "other"} {
		if err := os.WriteFile(filepath.Join(wd, name+".yaml"), []byte(chainFlow(name, 1)), 0o644); err != nil {
			return "", err
		}
	}
	for i := range n {
		file := "one.yaml"
		if i >= n/2 {
			file = "other.yaml"
		}
		cmd := exec.CommandContext(ctx, flowBin, "run", file)
		cmd.Dir, cmd.Env = wd, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("flow run %s: %w\n%s", file, err, tail(out, 2000))
		}
	}
	return wd, nil
}

// runNames are the runs in dir's runs directory.
func runNames(dir string) []string {
	entries, _ := os.ReadDir(filepath.Join(dir, ".flow", "runs"))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// removeRunsSince removes the runs of dir's runs directory that are not
// in before.
func removeRunsSince(dir string, before []string) error {
	for _, name := range runNames(dir) {
		if !slices.Contains(before, name) {
			if err := os.RemoveAll(filepath.Join(dir, ".flow", "runs", name)); err != nil {
				return err
			}
		}
	}
	return nil
}
