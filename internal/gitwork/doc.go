// Package gitwork runs the git commands that working copies need (docs/worktrees.md):
// worktrees made from a commit, checkpoints of what an agent changed, and
// landing a scope's branch on an integration branch by merge or rebase —
// all without touching the user's checked-out branch, index or working tree.
//
// It wraps the git command line: worktrees are not well supported elsewhere,
// and the CLI is what the user's repository is made for. Merges are done by
// plumbing (merge-tree --write-tree, commit-tree, update-ref), which needs
// no working tree; a rebase is done in the scope's own worktree. Git 2.38 or
// later is needed; an older or missing git is an error wrapping ErrNoGit.
//
// # Locks
//
// Every command that writes (worktrees, branches, commits, landings) holds a
// mutex per repository for as long as it runs, and only that long: nothing
// here holds a lock across a wait. Between processes, git's own lock files
// serialise; a command that finds one taken is tried again a few times.
// Worktrees are never locked with `git worktree lock`, so a run that died
// never blocks another run's worktrees, and `git worktree prune` clears what
// it left registered.
//
// # Sharing
//
// A *Repo is safe for concurrent use. Commands run as their own process
// group (package proc) and end with their context.
package gitwork
