package gitwork

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Change is what the commits from..to of the repository at dir changed,
// as a patch `git apply` takes, binary files included: what an isolated
// visit did to its worktree, which a recording carries to another run
// and another repository (docs/reuse-and-tests.md).
func Change(ctx context.Context, dir, from, to string) (string, error) {
	return run(ctx, dir, nil, "diff", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", from, to, "--")
}

// Apply makes the change patch (as Change wrote it) in the working tree
// holding dir, from its top: all of it or, when any part does not apply
// to what is there, nothing.
func Apply(ctx context.Context, dir, patch string) error {
	if patch == "" {
		return nil
	}
	top, err := run(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "flow-change-*.patch")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(patch); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := run(ctx, strings.TrimSpace(top), nil, "apply", "--binary", "--whitespace=nowarn", f.Name()); err != nil {
		return fmt.Errorf("the recorded change does not apply: %w", err)
	}
	return nil
}

// Tree is the tree of commit rev: the identity of its content, the same
// in every clone and for every commit of the same files.
func (r *Repo) Tree(ctx context.Context, rev string) (string, error) {
	out, err := run(ctx, r.Top, nil, "rev-parse", "--verify", "--quiet", rev+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}
