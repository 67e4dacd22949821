package flows

import (
	"path/filepath"

	"github.com/flowrun/flow/schema"
)

// WorktreeValue is how one isolated scope appears as x.worktree, the value
// WorktreeType describes.
func WorktreeValue(branch, commit string, files []string, landed bool) map[string]any {
	fs := make([]any, len(files))
	for i, f := range files {
		fs[i] = f
	}
	return map[string]any{"branch": branch, "commit": commit, "files": fs, "landed": landed}
}

// NoWorktree is x.worktree of a scope that never ran.
func NoWorktree() map[string]any { return WorktreeValue("", "", nil, false) }

// ZeroWorktree is x.worktree of an isolated node that did not get as far
// as its scopes: of the node's shape (isolatedValueType), every scope
// unrun.
func ZeroWorktree(n *Node, items int) any {
	switch n.Kind {
	case schema.KindMap:
		list := make([]any, items)
		for i := range list {
			list[i] = NoWorktree()
		}
		return list
	case schema.KindParallel:
		m := make(map[string]any, len(n.Branches()))
		for _, b := range n.Branches() {
			m[b.Name] = NoWorktree()
		}
		return m
	}
	return NoWorktree()
}

// IsolatedRepos lists the directories of the repositories p isolates scopes
// in that are known before a run starts: workDir for a node without repo:,
// and each repo: without ${{ }}, relative to workDir. A repo: that is an
// expression is known only when its node runs.
func (p *Plan) IsolatedRepos(workDir string) []string {
	var dirs []string
	for _, f := range p.Flows {
		EachNode(f.Nodes, func(n *Node) {
			switch {
			case !n.Isolation:
			case n.Repo == nil:
				dirs = append(dirs, workDir)
			case n.Repo.IsStatic():
				d := n.Repo.Source
				if len(n.Repo.Parts) == 1 {
					d = n.Repo.Parts[0].Text
				}
				if !filepath.IsAbs(d) {
					d = filepath.Join(workDir, d)
				}
				dirs = append(dirs, d)
			}
		})
	}
	return dirs
}
