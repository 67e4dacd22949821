package temporal

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/gitwork"
)

// Workspaces says whether the run workflow gives isolated scopes working
// copies on its workers (docs/temporal.md, "Working copies on workers").
// Until it does, CheckWorkspace refuses every isolated flow up front, so
// that a refused run never leaves a run directory behind.
const Workspaces = true

// CheckWorkspace refuses, before anything of a run is made (no run
// directory, no workflow), a plan whose isolated scopes cannot run on
// Temporal workers: workers share no disk with the machine that starts
// the run, so every repository a scope isolates in needs a remote they
// can all reach — the working copy's `origin`, or a `repo:` that is a
// URL. It asks each remote once (git ls-remote). A `repo:` that is an
// expression is known only when its node runs; the worker checks it
// then. workDir is the run's working directory.
func CheckWorkspace(ctx context.Context, plan *flows.Plan, workDir string) error {
	nodes := isolatedNodes(plan)
	if len(nodes) == 0 {
		return nil
	}
	checked := map[string]error{}
	for _, n := range nodes {
		if n.Land == "rebase" {
			return &engine.RefusedError{Msg: fmt.Sprintf("%s: land: rebase replays a scope's commits in a working copy of the run's machine; on Temporal, scopes land with land: merge (or none)", n.Pos)}
		}
		where, ok := staticRepo(n, workDir)
		if !ok {
			continue
		}
		err, seen := checked[where]
		if !seen {
			err = reachableRemote(ctx, where)
			checked[where] = err
		}
		if err != nil {
			return &engine.RefusedError{Msg: fmt.Sprintf("%s: isolation: worktree on Temporal needs a remote the workers can reach: %v; or run the flow with flow run, not on remote workers", n.Pos, err)}
		}
	}
	if !Workspaces {
		return &engine.RefusedError{Msg: fmt.Sprintf("%s: isolation: worktree needs the run's working copy on this machine; run it with flow run, not on remote workers", nodes[0].Pos)}
	}
	return nil
}

// isolatedNodes are the nodes of p with isolation, flow by flow in the
// order of their names, each flow's in the order written.
func isolatedNodes(p *flows.Plan) []*flows.Node {
	names := make([]string, 0, len(p.Flows))
	for name := range p.Flows {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []*flows.Node
	for _, name := range names {
		flows.EachNode(p.Flows[name].Nodes, func(n *flows.Node) {
			if n.Isolation {
				out = append(out, n)
			}
		})
	}
	return out
}

// staticRepo is the repository an isolated node works in, when it is
// known before the run: a directory (absolute) or a URL.
func staticRepo(n *flows.Node, workDir string) (string, bool) {
	if n.Repo == nil {
		return workDir, true
	}
	if !n.Repo.IsStatic() {
		return "", false
	}
	s := n.Repo.Source
	if len(n.Repo.Parts) == 1 {
		s = n.Repo.Parts[0].Text
	}
	s = strings.TrimSpace(s)
	if gitwork.IsURL(s) || filepath.IsAbs(s) {
		return s, true
	}
	return filepath.Join(workDir, s), true
}

// reachableRemote says why the repository at where (a directory or a
// URL) has no remote that workers can reach, or nil.
func reachableRemote(ctx context.Context, where string) error {
	url := where
	if !gitwork.IsURL(where) {
		origin, err := gitwork.Origin(ctx, where)
		if err != nil {
			return fmt.Errorf("reading the remote of %s: %w", where, err)
		}
		if origin == "" {
			return fmt.Errorf("the repository of %s has no remote \"origin\" (add one: git remote add origin URL)", where)
		}
		url = origin
	}
	if err := gitwork.Reachable(ctx, url); err != nil || gitwork.IsURL(where) {
		return err
	}
	// Workers fetch the commit the run starts from off the remote.
	g, err := gitwork.Open(ctx, where)
	if err != nil {
		return err
	}
	head, err := g.Head(ctx)
	if err != nil {
		return err
	}
	on, err := g.OnRemote(ctx, url, head)
	if err == nil && !on {
		err = fmt.Errorf("the commit the run starts from, %s (checked out in %s), is not on its remote %s: push it there first (git push origin HEAD), workers fetch it from there", head[:min(12, len(head))], g.Top, url)
	}
	return err
}
