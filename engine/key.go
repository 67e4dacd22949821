package engine

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/flows"
)

// visitKey is the key of a visit of leaf n (docs/reuse-and-tests.md): the
// node's static parts, computed when the plan was loaded, with what this
// walk gives it. A visit in an isolated scope is marked so: its outcome
// is its commit too, which flow run --reuse does not land again.
func (r *runner) visitKey(ctx context.Context, fr *frame, n *flows.Node, path, model, prompt string, sess *session, c *Command) *flows.VisitKey {
	run := filepath.Join(r.opts.RunsDir, r.opts.RunID)
	roots := map[string]string{run: "<run>", r.workDir(fr): "<workdir>", r.opts.RunID: "<run-id>"}
	if abs, err := filepath.Abs(run); err == nil {
		roots[abs] = "<run>"
	}
	in := flows.KeyInput{Path: path, Model: model, Prompt: prompt, Repeat: r.opts.Repeat, Roots: roots}
	if sess != nil {
		in.Chain = sess.chain
	}
	if c != nil {
		in.Argv, in.Script, in.Env = c.Argv, c.Script, c.Env
		if n.Reuse == flows.ReuseAlways {
			in.Workdir = treeOf(ctx, c.Dir)
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
// (`flow test --stub-commands` answers every command by key).
func offered(n *flows.Node, k *flows.VisitKey) *flows.VisitKey {
	if n.Reuse == flows.ReuseNever {
		return nil
	}
	return k
}

// treeOf is the identity of dir's content, for a run node that says
// reuse: true: the git tree of every file in it, untracked ones included
// and ignored ones and .flow left out, written through an index of its
// own so that the repository's is not touched. A directory that is not in
// a git repository has none: a nonce, which no recording matches.
func treeOf(ctx context.Context, dir string) string {
	tmp, err := os.MkdirTemp("", "flow-tree-")
	if err == nil {
		defer os.RemoveAll(tmp)
		git := func(args ...string) (string, error) {
			cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
			cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(tmp, "index"))
			out, err := cmd.Output()
			return strings.TrimSpace(string(out)), err
		}
		if _, err = git("add", "-A", "--", ".", ":(exclude).flow"); err == nil {
			var tree string
			if tree, err = git("write-tree"); err == nil && tree != "" {
				return "git-tree " + tree
			}
		}
	}
	return "none " + rand.Text()
}
