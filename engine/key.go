package engine

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/flowrun/flow/flows"
)

// visitKey is the key of a visit of leaf n (docs/reuse-and-tests.md): the
// node's static parts, computed when the plan was loaded, with what this
// walk gives it. A repository an isolated scope opened is named by its
// content, not its path: a flow that makes one in a fresh temporary
// directory keys the same in every run. A visit in an isolated scope is
// marked so: its outcome is its change to the worktree too, which a
// recording must carry for it to be reused.
func (r *runner) visitKey(ctx context.Context, fr *frame, n *flows.Node, path, model, prompt string, sess *session, c *Command) *flows.VisitKey {
	run := filepath.Join(r.opts.RunsDir, r.opts.RunID)
	roots := map[string]string{run: "<run>", r.workDir(fr): "<workdir>", r.opts.RunID: "<run-id>"}
	if abs, err := filepath.Abs(run); err == nil {
		roots[abs] = "<run>"
	}
	for _, dn := range r.wt.Named() {
		if _, ok := roots[dn[0]]; !ok {
			roots[dn[0]] = dn[1]
		}
	}
	in := flows.KeyInput{Path: path, Model: model, Prompt: prompt, Repeat: r.opts.Repeat, Roots: roots}
	if sess != nil {
		in.Chain = sess.chain
	}
	if c != nil {
		in.Argv, in.Script, in.Env = c.Argv, c.Script, c.Env
		if n.Reuse == flows.ReuseAlways {
			in.Workdir = r.tree(ctx, c.Dir)
		}
	}
	k := n.Key(in)
	k.Isolated = fr.scope != nil || n.Isolation
	return &k
}

// chained moves a memory scope's chain on past a visit that succeeded.
func chained(sess *session, k *flows.VisitKey) {
	if sess != nil && k != nil {
		sess.chain = flows.Chain(sess.chain, k.Key)
	}
}

// offered is the key a leaf seam may answer a turn from a recording
// with: none for a node that says `reuse: never`. A command's key is
// always handed on, with Command.Reuse saying whether its node allows it
// (`flow test` answers every command by key unless --live-commands).
func offered(n *flows.Node, k *flows.VisitKey) *flows.VisitKey {
	if n.Reuse == flows.ReuseNever {
		return nil
	}
	return k
}

// tree is the identity of dir's content, for a run node that says
// reuse: true: the host's Workspace says it (a git tree). A host that
// cannot say gives a value no recording matches.
func (r *runner) tree(ctx context.Context, dir string) string {
	if r.workspace != nil {
		if t := r.workspace.Tree(ctx, dir); t != "" {
			return t
		}
	}
	return fmt.Sprintf("none %s %d", dir, r.rt.Now().UnixNano())
}
