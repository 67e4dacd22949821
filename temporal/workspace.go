package temporal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/internal/gitwork/refname"
)

// workspace holds the working copies of a run's isolated scopes on
// workers (docs/temporal.md, "Working copies on workers"): a repository
// is its remote, a scope is its branch there, and every git step is an
// activity on whichever worker takes it (workspace_activities.go). A
// scope's worktree path is a name in the run's terms — the turn names it,
// the leaves look its scope up by it — and each leaf's worker makes a
// worktree of its own for the leaf. It is workflow state: touched only
// from the workflow's coroutines, its map read and written by key.
type workspace struct {
	runID   string
	workDir string
	root    string // the worktrees directory, in the run's terms
	queue   string
	timing  Timing
	scopes  map[string]*ScopeRef // by worktree path
}

var _ worktrees.Workspace = (*workspace)(nil)

func newWorkspace(runID, workDir, queue string, timing Timing) *workspace {
	return &workspace{runID: runID, workDir: workDir, queue: queue, timing: timing,
		root:   filepath.Join(workDir, ".flow", "runs", runID, "worktrees"),
		scopes: map[string]*ScopeRef{}}
}

// gitStep bounds one git activity; a worker that dies mid-way stops
// heartbeating and the step runs again elsewhere (every step is safe to
// run again).
const gitStep = 2 * time.Minute

func (ws *workspace) Worktree(scope string) string {
	return filepath.Join(ws.root, strings.NewReplacer("/", "-", "[", "-", "]", "", "#", "-").Replace(scope))
}

// KeepOutOfGit has nothing to keep out: the worktrees are in workers'
// clones, not in the user's repository.
func (ws *workspace) KeepOutOfGit() error { return nil }

func (ws *workspace) ReadyWorktree(path string) error {
	if !ws.owns(path) {
		return fmt.Errorf("the worktree %s is not the run's own (%s)", path, ws.root)
	}
	return nil
}

func (ws *workspace) owns(path string) bool {
	rel, err := filepath.Rel(ws.root, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

func (ws *workspace) Confine(list []*record.Worktree) (notes []string) {
	for _, wt := range list {
		if wt.Path != "" && !ws.owns(wt.Path) {
			notes = append(notes, fmt.Sprintf("the journal names %s as the worktree of %s, which is not the run's: left alone, the scope gets a worktree of its own", wt.Path, wt.Scope))
			wt.Path = ""
		}
	}
	return notes
}

// Tree is "": a directory's content is a worker's, not the workflow's.
func (ws *workspace) Tree(context.Context, string) string { return "" }

func (ws *workspace) IntegrationBranch(runID string) string { return refname.IntegrationBranch(runID) }

func (ws *workspace) ScopeBranch(runID, scope string) string {
	return refname.ScopeBranch(runID, scope)
}

// scopeAt is the scope whose worktree path is dir, or nil: what a leaf in
// it needs to make it on its worker.
func (ws *workspace) scopeAt(dir string) *ScopeRef {
	if ws == nil {
		return nil
	}
	return ws.scopes[dir]
}

// step runs one git activity on the shared queue. A ctx no stop can end
// (the walker's WithoutCancel) runs it on a disconnected workflow
// context, so that it runs to its end.
func (ws *workspace) step(ctx context.Context, name string, in, out any) error {
	w := workflowOf(ctx)
	if ctx.Done() == nil {
		w, _ = workflow.NewDisconnectedContext(w)
	}
	o := workflow.ActivityOptions{TaskQueue: ws.queue, StartToCloseTimeout: gitStep, HeartbeatTimeout: ws.timing.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 3}}
	err := untilOpened(w, func() workflow.Future { return workflow.ExecuteActivity(workflow.WithActivityOptions(w, o), name, in) }, out)
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return errors.New(ae.Error())
	}
	return err
}

// OpenRepo resolves dir's repository on a worker (its remote, its top
// directory in the run's terms), and makes the run's branch on the
// remote at base(top), or at the worker's checkout's head.
func (ws *workspace) OpenRepo(ctx context.Context, runID, dir string, base func(top string) string) (worktrees.Repo, error) {
	var res RepoOutput
	if err := ws.step(ctx, RepoActivity, &RepoInput{RunID: runID, WorkDir: ws.workDir, Dir: dir}, &res); err != nil {
		return nil, err
	}
	b := base(res.Top)
	if b == "" {
		b = res.Head
	}
	if b == "" {
		return nil, fmt.Errorf("the repository %s has no commit to start from", res.Top)
	}
	var opened RepoOutput
	if err := ws.step(ctx, RepoActivity, &RepoInput{RunID: runID, Open: true, URL: res.URL, Base: b}, &opened); err != nil {
		return nil, err
	}
	return &remoteRepo{ws: ws, url: res.URL, top: res.Top, base: b}, nil
}

// remoteRepo is one repository of a run on Temporal: its remote.
type remoteRepo struct {
	ws       *workspace
	url, top string
	base     string
}

func (r *remoteRepo) Top() string  { return r.top }
func (r *remoteRepo) Base() string { return r.base }

// Tree is "": on workers a repository is named in keys by its path.
func (r *remoteRepo) Tree(context.Context) string { return "" }

// MakeWorktree sets the scope's branch on the remote to at; the leaves of
// the scope make their worktrees from it.
func (r *remoteRepo) MakeWorktree(ctx context.Context, path, branch, at string) error {
	if err := r.ws.step(ctx, ScopeActivity, &ScopeInput{URL: r.url, Branch: branch, At: at}, nil); err != nil {
		return err
	}
	r.ws.scopes[path] = &ScopeRef{URL: r.url, Branch: branch, Path: path}
	return nil
}

// Checkpoint takes what the visit's leaf left on its worker's pending
// branch as the scope's new head.
func (r *remoteRepo) Checkpoint(ctx context.Context, path, since, visit string) (string, []string, error) {
	ref := r.ws.scopes[path]
	if ref == nil {
		return "", nil, fmt.Errorf("no scope has the worktree %s", path)
	}
	var out CheckpointOutput
	if err := r.ws.step(ctx, CheckpointActivity, &CheckpointInput{URL: r.url, Branch: ref.Branch, Since: since, Visit: visit}, &out); err != nil {
		return "", nil, err
	}
	return out.Head, out.Files, nil
}

// RemoveWorktree deletes the scope's pending branches on the remote, and
// its branch with dropBranch (it landed).
func (r *remoteRepo) RemoveWorktree(ctx context.Context, path, branch string, dropBranch bool) error {
	if err := r.ws.step(ctx, DropActivity, &DropInput{URL: r.url, Branch: branch, Drop: dropBranch}, nil); err != nil {
		return err
	}
	delete(r.ws.scopes, path)
	return nil
}

func (r *remoteRepo) BranchHead(ctx context.Context, branch string) (string, bool, error) {
	var out BranchOutput
	err := r.ws.step(ctx, BranchActivity, &BranchInput{URL: r.url, Branch: branch}, &out)
	return out.Head, out.OK, err
}

// Merge lands commit on the run's branch on the remote, once: the scope
// is the message's Flow-Scope trailer, by which a retried landing finds
// the one it made before.
func (r *remoteRepo) Merge(ctx context.Context, commit, visit, msg string) (worktrees.LandResult, error) {
	in := &LandInput{URL: r.url, RunID: r.ws.runID, Scope: trailer(msg, "Flow-Scope"), Integration: refname.IntegrationBranch(r.ws.runID),
		Commit: commit, Visit: visit, Msg: msg}
	var out LandOutput
	if err := r.ws.step(ctx, LandActivity, in, &out); err != nil {
		return worktrees.LandResult{}, err
	}
	return worktrees.LandResult{Conflicts: out.Conflicts, Onto: out.Onto, Head: out.Head}, nil
}

// Rebase is not done on workers: CheckWorkspace refuses land: rebase on
// Temporal before the run.
func (r *remoteRepo) Rebase(context.Context, string, string) (worktrees.LandResult, error) {
	return worktrees.LandResult{}, errors.New("land: rebase does not run on Temporal workers; use land: merge")
}

// trailer is the value of the trailer key in msg, or "".
func trailer(msg, key string) string {
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+": "); ok {
			return v
		}
	}
	return ""
}
