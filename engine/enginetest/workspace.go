package enginetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/worktrees"
)

// Workspace is an in-memory worktrees.Workspace: working copies that are
// names, commits that are counters, and a log of every step the walker
// asked of it, so that a test sees what the walker decides about
// isolated scopes (when each opens, checkpoints and lands) without git.
// Landings never conflict unless Conflicts says so.
type Workspace struct {
	// Conflicts, when set, says which landings conflict, by the path of
	// the visit that lands.
	Conflicts func(branch string) bool

	mu    sync.Mutex
	steps []string
	n     int
}

var _ worktrees.Workspace = (*Workspace)(nil)

// WithWorkspace is h with ws as its workspace.
func WithWorkspace(h *Host, ws *Workspace) engine.Host { return withWorkspace{h, ws} }

type withWorkspace struct {
	*Host
	ws *Workspace
}

func (w withWorkspace) Workspace() worktrees.Workspace { return w.ws }

// Steps are the steps asked so far, in order: "open DIR", "make BRANCH",
// "checkpoint VISIT", "remove BRANCH", "merge VISIT", "rebase VISIT".
func (w *Workspace) Steps() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.steps...)
}

func (w *Workspace) log(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = append(w.steps, fmt.Sprintf(format, args...))
}

// commit is a new commit's name.
func (w *Workspace) commit() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fmt.Sprintf("c%d", w.n)
}

func (w *Workspace) Worktree(scope string) string                           { return "/memory/worktrees/" + scope }
func (w *Workspace) KeepOutOfGit() error                                    { return nil }
func (w *Workspace) ReadyWorktree(string) error                             { return nil }
func (w *Workspace) Confine([]*record.Worktree) []string                    { return nil }
func (w *Workspace) Tree(context.Context, string) string                    { return "" }
func (w *Workspace) IntegrationBranch(runID string) string                  { return "flow/" + runID }
func (w *Workspace) ScopeBranch(runID, scope string) string                 { return "flow/" + runID + "." + scope }
func (r *memRepo) Top() string                                              { return r.top }
func (r *memRepo) Base() string                                             { return r.base }
func (r *memRepo) Tree(context.Context) string                              { return "" }
func (r *memRepo) BranchHead(context.Context, string) (string, bool, error) { return "", false, nil }

// OpenRepo opens dir as a repository whose top is dir itself.
func (w *Workspace) OpenRepo(_ context.Context, runID, dir string, base func(string) string) (worktrees.Repo, error) {
	w.log("open %s", dir)
	at := base(dir)
	if at == "" {
		at = "c0"
	}
	return &memRepo{w: w, top: dir, base: at}, nil
}

type memRepo struct {
	w         *Workspace
	top, base string
}

func (r *memRepo) MakeWorktree(_ context.Context, _, branch, _ string) error {
	r.w.log("make %s", branch)
	return nil
}

func (r *memRepo) Checkpoint(_ context.Context, _, _, visit string) (string, []string, error) {
	r.w.log("checkpoint %s", visit)
	return r.w.commit(), []string{visit + ".txt"}, nil
}

func (r *memRepo) RemoveWorktree(_ context.Context, _, branch string, _ bool) error {
	r.w.log("remove %s", branch)
	return nil
}

func (r *memRepo) Merge(_ context.Context, commit, visit, _ string) (worktrees.LandResult, error) {
	r.w.log("merge %s", visit)
	return r.land(commit, visit)
}

func (r *memRepo) Rebase(_ context.Context, _, visit string) (worktrees.LandResult, error) {
	r.w.log("rebase %s", visit)
	return r.land("", visit)
}

func (r *memRepo) land(commit, visit string) (worktrees.LandResult, error) {
	if r.w.Conflicts != nil && r.w.Conflicts(visit) {
		return worktrees.LandResult{Conflicts: []string{visit + ".txt"}}, nil
	}
	if commit == "" { // a rebase makes the scope's commits again
		commit = r.w.commit()
	}
	return worktrees.LandResult{Onto: r.w.commit(), Head: commit}, nil
}
