package flows

import (
	"path/filepath"

	"github.com/flowrun/flow/schema"
)

// isolation compiles a node's `isolation:`, `land:` and `repo:` (docs/worktrees.md)
// and checks what can be checked before anything runs: that land: and
// repo: come with isolation, that the repository is one (when it is known
// at load time: the working directory's, or a repo: without ${{ }}), and
// that the node is not inside another isolated scope.
func (c *checker) isolation(n *Node, d *schema.Node, sc *scope, ancestors []*schema.Node) {
	if !d.Isolation.Set() {
		for _, k := range []struct {
			name string
			key  schema.String
		}{{"land", d.Land}, {"repo", d.Repo}} {
			if name, key := k.name, k.key; key.Set() {
				c.diags.Add(key.Pos, schema.CodeIsolation, "add isolation: worktree, or remove "+name+":", "%s: is for isolated nodes, and node %q has no isolation: worktree", name, d.ID.Value)
			}
		}
		return
	}
	n.Isolation, n.Land = true, "merge"
	if d.Land.Set() {
		n.Land = d.Land.Value
	}
	for _, a := range ancestors {
		if a.Isolation.Set() {
			c.diags.Add(d.Isolation.Pos, schema.CodeIsolation, "remove one of them: a scope inside node "+a.ID.Value+" already works in its worktree",
				"node %q is isolated inside node %q, which is isolated already", d.ID.Value, a.ID.Value)
			return
		}
	}
	workDir := c.loader.opts.workDir()
	switch {
	case c.loader.opts.recorded:
		// Checked when the run was loaded, before its snapshot: a
		// recorded plan reads nothing (Reload).
		if d.Repo.Set() {
			n.Repo = c.template(d.Repo, sc)
		}
	case d.Repo.Set():
		n.Repo = c.template(d.Repo, sc)
		if n.Repo.IsStatic() {
			dir := d.Repo.Value
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(workDir, dir)
			}
			if !c.loader.opts.isRepo(dir) {
				c.diags.Add(d.Repo.Pos, schema.CodeIsolation, "give the directory of a git repository (relative to the working directory)", "repo %q is not in a git repository", d.Repo.Value)
			}
		}
	case !c.loader.opts.isRepo(workDir):
		c.diags.Add(d.Isolation.Pos, schema.CodeIsolation, "run flow inside a git repository, or give repo: <a repository's directory>",
			"isolation: worktree needs a git repository, and the working directory is in none")
	}
}

// isolates marks n when it or a node below it is isolated, and refuses a
// called flow that isolates its own nodes from inside an isolated scope.
func (c *checker) isolates(n *Node, d *schema.Node, ancestors []*schema.Node) {
	below := false
	for _, b := range n.Branches() {
		for _, x := range b.Nodes {
			below = below || x.Isolates
		}
	}
	for _, x := range n.Body() {
		below = below || x.Isolates
	}
	if call := n.AsCall(); call != nil {
		if callee := c.loader.plan.Flows[call.Callee]; callee != nil {
			for _, x := range callee.Nodes {
				below = below || (x != nil && x.Isolates)
			}
		}
		outer := d.Isolation.Set()
		for _, a := range ancestors {
			outer = outer || a.Isolation.Set()
		}
		if below && outer {
			c.diags.Add(d.KindPos, schema.CodeIsolation, "remove isolation from one of them: scopes do not nest",
				"flow %q isolates nodes of its own, and node %q calls it from an isolated scope", call.Callee, d.ID.Value)
		}
	}
	n.Isolates = n.Isolation || below
}
