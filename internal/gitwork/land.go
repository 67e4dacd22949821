package gitwork

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Checkpoint commits everything that changed in the worktree at wt (files
// added, changed and removed, as `git add -A` sees them, ignored files
// left out) with message msg, and returns the worktree's head and the files
// that changed between since and it — an agent's own commits included.
// With nothing to commit the head stays where it was.
func (r *Repo) Checkpoint(ctx context.Context, wt, since string, id Identity, msg string) (head string, files []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := run(ctx, wt, nil, "add", "-A"); err != nil {
		return "", nil, err
	}
	staged, err := run(ctx, wt, nil, "diff", "--cached", "--name-only", "-z")
	if err != nil {
		return "", nil, err
	}
	if staged != "" {
		if _, err := run(ctx, wt, &id, "commit", "-q", "--no-verify", "--allow-empty-message", "-m", msg); err != nil {
			return "", nil, err
		}
	}
	out, err := run(ctx, wt, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", nil, err
	}
	head = strings.TrimSpace(out)
	if head == since {
		return head, nil, nil
	}
	changed, err := run(ctx, wt, nil, "diff", "--name-only", "-z", since, head)
	if err != nil {
		return "", nil, err
	}
	return head, splitZ(changed), nil
}

// Landing is how a landing went: the integration branch's commit after it,
// or the files that conflicted.
type Landing struct {
	Onto      string   // the integration branch's commit after landing
	Head      string   // the scope's head after landing: moved by a rebase
	Conflicts []string // files that conflicted; empty when it landed
	Already   bool     // the branch held the commit already: nothing was done
}

// Merge lands commit on branch target with a merge commit (never a
// fast-forward, so each landing is one commit on the branch's first-parent
// line) made by plumbing: the user's working tree and index are not used.
// A commit target already holds lands as it is. A conflict changes nothing
// and is reported in Landing.Conflicts.
func (r *Repo) Merge(ctx context.Context, target, commit string, id Identity, msg string) (Landing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok, err := r.Commit(ctx, "refs/heads/"+target)
	if err != nil {
		return Landing{}, err
	}
	if !ok {
		return Landing{}, fmt.Errorf("the integration branch %s is gone", target)
	}
	if in, err := r.IsAncestor(ctx, commit, old); err != nil || in {
		return Landing{Onto: old, Head: commit, Already: in}, err
	}
	out, err := run(ctx, r.Top, nil, "merge-tree", "--write-tree", "--name-only", "-z", old, commit)
	if exitCode(err) == 1 {
		return Landing{Onto: old, Head: commit, Conflicts: conflicted(out)}, nil
	}
	if err != nil {
		return Landing{}, err
	}
	tree, _, _ := strings.Cut(out, "\x00")
	tree = strings.TrimSpace(tree)
	out, err = run(ctx, r.Top, &id, "commit-tree", tree, "-p", old, "-p", commit, "-m", msg)
	if err != nil {
		return Landing{}, err
	}
	merged := strings.TrimSpace(out)
	if _, err := run(ctx, r.Top, nil, "update-ref", "-m", "flow: "+firstLine(msg), "refs/heads/"+target, merged, old); err != nil {
		return Landing{}, err
	}
	return Landing{Onto: merged, Head: commit}, nil
}

// Rebase lands the branch checked out in the worktree at wt on branch
// target: it replays the branch's commits onto target there (commits target
// has already are dropped) and moves target forward to the result. A
// conflict aborts the rebase, changes nothing and is reported in
// Landing.Conflicts.
func (r *Repo) Rebase(ctx context.Context, wt, target string, id Identity) (Landing, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok, err := r.Commit(ctx, "refs/heads/"+target)
	if err != nil {
		return Landing{}, err
	}
	if !ok {
		return Landing{}, fmt.Errorf("the integration branch %s is gone", target)
	}
	if _, err := run(ctx, wt, &id, "rebase", "-q", "--no-autostash", old); err != nil {
		files, _ := run(ctx, wt, nil, "diff", "--name-only", "-z", "--diff-filter=U")
		if _, aerr := run(ctx, wt, nil, "rebase", "--abort"); aerr != nil {
			return Landing{}, fmt.Errorf("aborting the rebase after %v: %w", err, aerr)
		}
		if c := splitZ(files); len(c) > 0 {
			head, _ := run(ctx, wt, nil, "rev-parse", "HEAD")
			return Landing{Onto: old, Head: strings.TrimSpace(head), Conflicts: c}, nil
		}
		return Landing{}, err
	}
	out, err := run(ctx, wt, nil, "rev-parse", "HEAD")
	if err != nil {
		return Landing{}, err
	}
	head := strings.TrimSpace(out)
	if head == old {
		return Landing{Onto: old, Head: head, Already: true}, nil
	}
	if _, err := run(ctx, r.Top, nil, "update-ref", "-m", "flow: rebase", "refs/heads/"+target, head, old); err != nil {
		return Landing{}, err
	}
	return Landing{Onto: head, Head: head}, nil
}

// conflicted reads the files of merge-tree's -z --name-only output after
// the tree: NUL-separated names up to an empty one, then the messages.
func conflicted(out string) []string {
	parts := strings.Split(out, "\x00")
	var files []string
	for _, p := range parts[1:] {
		if p == "" {
			break
		}
		files = append(files, p)
	}
	slices.Sort(files)
	return slices.Compact(files)
}

func splitZ(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
