package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/gitwork"
	"github.com/flowrun/flow/internal/gitwork/refname"
)

// The working copies of isolated scopes on workers (docs/temporal.md,
// "Working copies on workers"). Workers share no disk: each works in a
// clone of its own of the repository's remote, cached in its runs
// directory (.clones/), and they meet only in the remote. A
// scope's branch there is its last checkpoint; a visit's worker leaves
// what the visit changed on a pending branch (refname.PendingBranch),
// which the visit's checkpoint takes as the scope's next head; landing
// merges on the run's branch flow/<run-id> there. Every step is safe to
// run again after its worker died mid-way: each sets a branch to a
// commit, or (a landing) finds the landing it made before by its
// trailers.

// The names of the workspace's activities.
const (
	RepoActivity       = "flow.repo"
	ScopeActivity      = "flow.scope"
	CheckpointActivity = "flow.checkpoint"
	LandActivity       = "flow.land"
	DropActivity       = "flow.drop"
	BranchActivity     = "flow.branch"
)

// RepoInput opens the repository a scope isolates in: Dir (in the run's
// terms, mapped through the worker's --workdir) or a URL. With Open false
// it is only resolved; with Open the run's branch is made on the remote
// at Base unless it is there.
type RepoInput struct {
	RunID   string `json:"run_id"`
	WorkDir string `json:"workdir"`
	Dir     string `json:"dir"`
	Open    bool   `json:"open,omitempty"`
	URL     string `json:"url,omitempty"`
	Base    string `json:"base,omitempty"`
}

// RepoOutput is the repository resolved: its remote, its top-level
// directory in the run's terms, and the commit its checkout is at.
type RepoOutput struct {
	URL  string `json:"url"`
	Top  string `json:"top"`
	Head string `json:"head,omitempty"`
}

// ScopeInput sets a scope's branch on the remote to At; CheckpointInput
// takes what visit Visit left on its pending branch as the scope's head,
// from Since; DropInput deletes a scope's branches; BranchInput reads one.
type (
	ScopeInput struct {
		URL    string `json:"url"`
		Branch string `json:"branch"`
		At     string `json:"at"`
	}
	CheckpointInput struct {
		URL    string `json:"url"`
		Branch string `json:"branch"`
		Since  string `json:"since"`
		Visit  string `json:"visit"`
	}
	CheckpointOutput struct {
		Head  string   `json:"head"`
		Files []string `json:"files,omitempty"`
	}
	DropInput struct {
		URL    string `json:"url"`
		Branch string `json:"branch"`
		Drop   bool   `json:"drop,omitempty"` // the scope's branch too, not only its pending ones
	}
	BranchInput struct {
		URL    string `json:"url"`
		Branch string `json:"branch"`
	}
	BranchOutput struct {
		Head string `json:"head,omitempty"`
		OK   bool   `json:"ok,omitempty"`
	}
)

// LandInput lands Commit, scope Scope's, on the run's branch Integration
// on the remote, as a merge whose message is Msg; LandOutput is how it
// went (as gitwork.Landing).
type LandInput struct {
	URL         string `json:"url"`
	RunID       string `json:"run_id"`
	Scope       string `json:"scope"`
	Integration string `json:"integration"`
	Commit      string `json:"commit"`
	Visit       string `json:"visit"`
	Msg         string `json:"msg"`
}

type LandOutput struct {
	Conflicts []string `json:"conflicts,omitempty"`
	Onto      string   `json:"onto,omitempty"`
	Head      string   `json:"head,omitempty"`
	Already   bool     `json:"already,omitempty"`
}

// ScopeRef names the working copy a leaf works in on its worker: the
// scope's branch on the remote at URL. Path is the worktree's path in the
// run's terms, which the turn names.
type ScopeRef struct {
	URL    string `json:"url"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
}

// clones is where this worker keeps its clones: in its own runs
// directory, which no other worker shares.
func (a *Activities) clones() string { return filepath.Join(a.RunsDir, ".clones") }

func (a *Activities) clone(ctx context.Context, url string) (*gitwork.Repo, error) {
	return gitwork.Clone(ctx, a.clones(), url)
}

// Repo resolves (and with in.Open, opens) a scope's repository.
func (a *Activities) Repo(ctx context.Context, in *RepoInput) (*RepoOutput, error) {
	defer gitBeat(ctx, "opening the repository")()
	if in.Open {
		g, err := a.clone(ctx, in.URL)
		if err != nil {
			return nil, err
		}
		branch := refname.IntegrationBranch(in.RunID)
		if _, ok, err := g.FetchBranch(ctx, in.URL, branch); err != nil || ok {
			return &RepoOutput{URL: in.URL}, err
		}
		if err := g.FetchCommit(ctx, in.URL, in.Base); err != nil {
			return nil, fmt.Errorf("%w (the run starts from it: push it to %s)", err, in.URL)
		}
		return &RepoOutput{URL: in.URL}, g.Push(ctx, in.URL, in.Base, branch, false)
	}
	if gitwork.IsURL(in.Dir) {
		return &RepoOutput{URL: in.Dir, Top: in.Dir}, nil
	}
	dir := a.mapDir(in.WorkDir, in.Dir)
	g, err := gitwork.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	url, err := gitwork.Origin(ctx, g.Top)
	if err != nil {
		return nil, err
	}
	if url == "" {
		return nil, fmt.Errorf("%w: the repository %s has no remote \"origin\" on worker %s; isolated scopes on Temporal work in a remote the workers reach (docs/temporal.md)", engine.ErrUnavailable, g.Top, a.Queue)
	}
	head, _ := g.Head(ctx)
	return &RepoOutput{URL: url, Top: a.unmapDir(in.WorkDir, g.Top), Head: head}, nil
}

// mapDir is where the run's directory dir is on this worker: through
// --workdir, the same place relative to it as to the run's.
func (a *Activities) mapDir(runWorkDir, dir string) string {
	if a.WorkDir == "" {
		return dir
	}
	if rel, err := filepath.Rel(runWorkDir, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.Join(a.WorkDir, rel)
	}
	return dir
}

func (a *Activities) unmapDir(runWorkDir, dir string) string {
	if a.WorkDir == "" {
		return dir
	}
	if rel, err := filepath.Rel(a.WorkDir, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.Join(runWorkDir, rel)
	}
	return dir
}

// Scope sets a scope's branch on the remote to in.At.
func (a *Activities) Scope(ctx context.Context, in *ScopeInput) error {
	defer gitBeat(ctx, "opening the scope "+in.Branch)()
	g, err := a.clone(ctx, in.URL)
	if err == nil {
		err = g.FetchCommit(ctx, in.URL, in.At)
	}
	if err == nil {
		err = g.Push(ctx, in.URL, in.At, in.Branch, true)
	}
	return err
}

// Checkpoint takes what the visit left on its pending branch as the
// scope's head, when it follows from in.Since (a pending branch of an
// earlier attempt, made from another head, is not taken).
func (a *Activities) Checkpoint(ctx context.Context, in *CheckpointInput) (*CheckpointOutput, error) {
	defer gitBeat(ctx, "checkpointing "+in.Visit)()
	g, err := a.clone(ctx, in.URL)
	if err != nil {
		return nil, err
	}
	if err := g.FetchCommit(ctx, in.URL, in.Since); err != nil {
		return nil, err
	}
	head, ok, err := g.FetchBranch(ctx, in.URL, refname.PendingBranch(in.Branch, in.Visit))
	if err != nil {
		return nil, err
	}
	if !ok || head == in.Since {
		return &CheckpointOutput{Head: in.Since}, nil
	}
	if after, err := g.IsAncestor(ctx, in.Since, head); err != nil || !after {
		return &CheckpointOutput{Head: in.Since}, err
	}
	if err := g.Push(ctx, in.URL, head, in.Branch, true); err != nil {
		return nil, err
	}
	files, err := g.Files(ctx, in.Since, head)
	return &CheckpointOutput{Head: head, Files: files}, err
}

// Land lands a scope on the run's branch on the remote, once: a landing
// its branch already holds (by its Flow-Run and Flow-Scope trailers, or
// the commit itself) is not made again. Another landing that moved the
// branch meanwhile makes it try again from the new head.
func (a *Activities) Land(ctx context.Context, in *LandInput) (*LandOutput, error) {
	defer gitBeat(ctx, "landing "+in.Scope)()
	g, err := a.clone(ctx, in.URL)
	if err != nil {
		return nil, err
	}
	if err := g.FetchCommit(ctx, in.URL, in.Commit); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		tip, ok, err := g.FetchBranch(ctx, in.URL, in.Integration)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("the run's branch %s is gone from %s", in.Integration, in.URL)
		}
		if prev, err := g.Landed(ctx, tip, in.RunID, in.Scope); err != nil || prev != "" {
			return &LandOutput{Onto: prev, Head: in.Commit, Already: prev != ""}, err
		}
		if err := g.SetBranch(ctx, in.Integration, tip); err != nil {
			return nil, err
		}
		l, err := g.Merge(ctx, in.Integration, in.Commit, gitwork.RunIdentity(in.RunID, in.Visit), in.Msg)
		if err != nil || len(l.Conflicts) > 0 || l.Already {
			return &LandOutput{Conflicts: l.Conflicts, Onto: l.Onto, Head: l.Head, Already: l.Already}, err
		}
		if err := g.Push(ctx, in.URL, l.Onto, in.Integration, false); err != nil {
			if attempt < 3 {
				continue
			}
			return nil, err
		}
		return &LandOutput{Onto: l.Onto, Head: l.Head}, nil
	}
}

// Drop deletes a scope's pending branches on the remote, and its branch
// with in.Drop.
func (a *Activities) Drop(ctx context.Context, in *DropInput) error {
	defer gitBeat(ctx, "removing "+in.Branch)()
	g, err := a.clone(ctx, in.URL)
	if err != nil {
		return err
	}
	if in.Drop {
		return g.DeleteRemote(ctx, in.URL, in.Branch)
	}
	return g.DeleteRemote(ctx, in.URL, in.Branch+".pending/*")
}

// Branch reads a branch on the remote.
func (a *Activities) Branch(ctx context.Context, in *BranchInput) (*BranchOutput, error) {
	defer gitBeat(ctx, "reading "+in.Branch)()
	g, err := a.clone(ctx, in.URL)
	if err != nil {
		return nil, err
	}
	head, ok, err := g.FetchBranch(ctx, in.URL, in.Branch)
	return &BranchOutput{Head: head, OK: ok}, err
}

// enterScope makes the working copy a leaf of visit works in on this
// worker: a worktree of the worker's clone at the scope's head on the
// remote, clean. leave commits what the leaf changed, leaves it on the
// visit's pending branch and removes the worktree; the visit's checkpoint
// decides whether the scope takes it.
func (a *Activities) enterScope(ctx context.Context, ref *ScopeRef, runID, visit string) (dir string, leave func(context.Context) error, err error) {
	g, err := a.clone(ctx, ref.URL)
	if err != nil {
		return "", nil, err
	}
	head, ok, err := g.FetchBranch(ctx, ref.URL, ref.Branch)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, fmt.Errorf("the scope's branch %s is not on %s", ref.Branch, ref.URL)
	}
	pending := refname.PendingBranch(ref.Branch, visit)
	// The worktree is cleared before use and removed after: its path stays
	// inside the run's own worktrees directory, whatever the history says.
	if runID == "" || runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`) {
		return "", nil, fmt.Errorf("the run id %q cannot name a run directory", runID)
	}
	dir = filepath.Join(a.RunsDir, runID, "worktrees", strings.ReplaceAll(pending, "/", "-"))
	if err := g.Worktree(ctx, dir, pending, head); err != nil {
		return "", nil, err
	}
	leave = func(ctx context.Context) error {
		h, _, err := g.Checkpoint(ctx, dir, head, gitwork.RunIdentity(runID, visit), gitwork.CheckpointMessage(runID, visit))
		if err == nil {
			err = g.Push(ctx, ref.URL, h, pending, true)
		}
		if rerr := g.RemoveWorktree(ctx, dir); err == nil {
			err = rerr
		}
		_ = os.RemoveAll(dir)
		return err
	}
	return dir, leave, nil
}

// gitBeat heartbeats while a git activity runs, so that a worker killed
// mid-step is taken for dead after the heartbeat timeout, not the step's
// bound; outside an activity (a direct call) it does nothing.
func gitBeat(ctx context.Context, what string) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	return startHeartbeat(ctx, Progress{Activity: what}, nil, nil).stop
}

func registerWorkspace(w worker.Worker, acts *Activities) {
	w.RegisterActivityWithOptions(acts.Repo, activity.RegisterOptions{Name: RepoActivity})
	w.RegisterActivityWithOptions(acts.Scope, activity.RegisterOptions{Name: ScopeActivity})
	w.RegisterActivityWithOptions(acts.Checkpoint, activity.RegisterOptions{Name: CheckpointActivity})
	w.RegisterActivityWithOptions(acts.Land, activity.RegisterOptions{Name: LandActivity})
	w.RegisterActivityWithOptions(acts.Drop, activity.RegisterOptions{Name: DropActivity})
	w.RegisterActivityWithOptions(acts.Branch, activity.RegisterOptions{Name: BranchActivity})
}

// leafDir is where a leaf works on this worker: in its scope's working
// copy, made here, when it is in one (leave then hands what it changed
// to the remote), else as workDir says.
func (a *Activities) leafDir(ctx context.Context, scope *ScopeRef, dir, runID, visit string) (string, func(context.Context) error, error) {
	if scope == nil {
		d, err := a.workDir(dir)
		return d, func(context.Context) error { return nil }, err
	}
	d, leave, err := a.enterScope(ctx, scope, runID, visit)
	if err != nil {
		return "", nil, fmt.Errorf("%w: making the working copy of %s on worker %s: %v", engine.ErrUnavailable, scope.Branch, a.Queue, err)
	}
	return d, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gitStep)
		defer cancel()
		return leave(ctx)
	}, nil
}
