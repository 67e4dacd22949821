package replay

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/flowrun/flow/flows"
)

// Keys makes the keys of a run's leaf visits (docs/reuse-and-tests.md):
// each node's static parts, computed when the plan was loaded, with what
// the walk gives it.
type Keys struct {
	RunDir string // the run directory, as the user named it
	RunID  string
	Repeat int // a sweep cell's repeat: repeats are distinct samples
	// Named names the repositories isolated scopes opened by their
	// content: pairs of directory and name.
	Named func() [][2]string
	// Tree is the identity of dir's content, "" when the host cannot say.
	Tree func(ctx context.Context, dir string) string
	Now  func() time.Time
}

// Visit is what the walk gives one visit's key.
type Visit struct {
	Path, Model, Prompt string
	Chain               string // the memory scope's chain so far
	WorkDir             string // where the leaf works
	Isolated            bool   // in an isolated scope: its outcome is its change too
	// A command's: its argv or script, its environment and directory.
	Command bool
	Argv    []string
	Script  string
	Env     []string
	Dir     string
}

// Of is the key of visit v of leaf n. A repository an isolated scope
// opened is named by its content, not its path: a flow that makes one in
// a fresh temporary directory keys the same in every run. A visit in an
// isolated scope is marked so: a recording must carry its change to the
// worktree for it to be reused.
func (k *Keys) Of(ctx context.Context, n *flows.Node, v Visit) *flows.VisitKey {
	roots := map[string]string{k.RunDir: "<run>", v.WorkDir: "<workdir>", k.RunID: "<run-id>"}
	if abs, err := filepath.Abs(k.RunDir); err == nil {
		roots[abs] = "<run>"
	}
	for _, dn := range k.Named() {
		if _, ok := roots[dn[0]]; !ok {
			roots[dn[0]] = dn[1]
		}
	}
	in := flows.KeyInput{Path: v.Path, Model: v.Model, Prompt: v.Prompt, Repeat: k.Repeat, Roots: roots, Chain: v.Chain}
	if v.Command {
		in.Argv, in.Script, in.Env = v.Argv, v.Script, v.Env
		if n.Reuse == flows.ReuseAlways {
			in.Workdir = k.tree(ctx, v.Dir)
		}
	}
	key := n.Key(in)
	key.Isolated = v.Isolated || n.Isolation
	return &key
}

// tree is the identity of dir's content, for a run node that says
// reuse: true. A host that cannot say gives a value no recording matches.
func (k *Keys) tree(ctx context.Context, dir string) string {
	if t := k.Tree(ctx, dir); t != "" {
		return t
	}
	return fmt.Sprintf("none %s %d", dir, k.Now().UnixNano())
}

// Offered is the key a leaf seam may answer a visit of n from a
// recording with: none for a node that says `reuse: never`. A command's
// key is always handed on, with Command.Reuse saying whether its node
// allows it (`flow test` answers every command by key unless
// --live-commands).
func Offered(n *flows.Node, k *flows.VisitKey) *flows.VisitKey {
	if n.Reuse == flows.ReuseNever {
		return nil
	}
	return k
}
