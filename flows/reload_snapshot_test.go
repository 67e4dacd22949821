package flows

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/ordered"
)

// fingerprint is what a plan decides, in a fixed order: its flows and
// every node's kind, isolation, repository and static key, its agents as
// a run records them, and its warnings.
func fingerprint(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "root %s\n", p.Root.Name)
	for _, name := range ordered.Keys(p.Flows) {
		f := p.Flows[name]
		fmt.Fprintf(&b, "flow %s %s\n", name, f.File)
		EachNode(f.Nodes, func(n *Node) {
			repo := ""
			if n.Repo != nil {
				repo = n.Repo.Source
			}
			fmt.Fprintf(&b, "  %s %s isolation=%v isolates=%v land=%s repo=%q key=%+v\n", n.ID, n.Kind, n.Isolation, n.Isolates, n.Land, repo, *n.key)
		})
	}
	agents := EncodeAgents(p.Agents)
	for _, name := range ordered.Keys(agents) {
		fmt.Fprintf(&b, "agent %s %s\n", name, agents[name])
	}
	fmt.Fprintf(&b, "warnings %s\n", p.Warnings.Error())
	return b.String()
}

// The repository checks run when the flow is loaded, on the machine that
// starts the run, before its snapshot: Reload rebuilds the same plan from
// the snapshot alone, wherever it runs — in a directory that is no
// repository, with the repository and the agent directory gone, and with
// a working directory that no longer exists (os.Getwd fails), as on a
// Temporal worker without the checkout.
func TestReloadFromSnapshotAloneIsTheSamePlan(t *testing.T) {
	repo := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".git/HEAD", "ref: refs/heads/main\n")
	write("other/.git/HEAD", "ref: refs/heads/main\n")
	write("agents/coder.md", "---\nname: coder\ndescription: the coder\ndriver: exec\ncommand: [cat]\n---\nYou are the coder.\n")
	write("f.yaml", `name: f
agents: [./agents]
nodes:
  - id: fix
    agent: coder
    isolation: worktree
    prompt: Fix it.
  - id: there
    agent: coder
    isolation: worktree
    repo: ./other
    land: rebase
    prompt: Fix it there.
  - id: then
    flow: g
    input: fix.output
`)
	write("g.yaml", "name: g\nnodes:\n  - {id: hi, run: [echo, hi]}\n")
	file := filepath.Join(repo, "f.yaml")

	// What the starting machine does: load, with the repository there.
	loaded, diags := Load(file, Options{Disk: osdisk.OS, WorkDir: repo, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	sources := map[string][]byte{}
	for _, f := range loaded.Flows {
		src, err := os.ReadFile(f.File)
		if err != nil {
			t.Fatal(err)
		}
		sources[f.File] = src
	}
	agents := EncodeAgents(loaded.Agents)
	want := fingerprint(loaded)

	// What a worker has: the snapshot, and none of the disk.
	gone := t.TempDir()
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	if wd, err := os.Getwd(); err == nil {
		t.Logf("os.Getwd still answers %q", wd)
	}
	for _, workDir := range []string{repo, "", filepath.Join(gone, "elsewhere")} {
		plan, diags := Reload(file, sources, agents, workDir, Options{Disk: osdisk.OS})
		if diags.HasErrors() {
			t.Fatalf("Reload with workDir %q reads the disk:\n%s", workDir, diags.Error())
		}
		if got := fingerprint(plan); got != want {
			t.Errorf("Reload with workDir %q gives another plan:\n--- got\n%s--- want\n%s", workDir, got, want)
		}
	}
}
