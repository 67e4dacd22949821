package gitwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A repository reached across machines (docs/temporal.md, "Working copies
// on workers"): its remote is where a run's start commit comes from and
// where scope branches and the integration branch go. Every worker works
// in a clone of its own, cached by URL, and meets the others only in the
// remote.

// RemoteTimeout bounds one exchange with a remote: a remote that does not
// answer in that time is taken for unreachable.
const RemoteTimeout = 30 * time.Second

// Origin is the URL of the remote "origin" of the repository dir is in,
// or "" when it has none.
func Origin(ctx context.Context, dir string) (string, error) {
	if err := checkGit(ctx); err != nil {
		return "", err
	}
	out, err := run(ctx, dir, nil, "config", "--get", "remote.origin.url")
	switch {
	case exitCode(err) == 1: // no such key
		return "", nil
	case err != nil:
		return "", err
	}
	return resolveURL(dir, strings.TrimSpace(out)), nil
}

// resolveURL makes a remote named by a relative path absolute, so that a
// worker elsewhere reads it as the same place.
func resolveURL(dir, url string) string {
	if IsURL(url) || filepath.IsAbs(url) {
		return url
	}
	if abs, err := filepath.Abs(filepath.Join(dir, url)); err == nil {
		return abs
	}
	return url
}

// IsURL reports whether s names a remote repository rather than a
// directory: a URL with a scheme (file://, https://, ssh://) or git's
// scp-like user@host:path.
func IsURL(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	at, colon := strings.Index(s, "@"), strings.Index(s, ":")
	return at > 0 && colon > at && !strings.ContainsAny(s[:at], "/")
}

// Reachable says why the remote at url cannot be reached, or nil: it
// lists the remote's heads (git ls-remote), within RemoteTimeout.
func Reachable(ctx context.Context, url string) error {
	if err := checkGit(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	if _, err := run(ctx, os.TempDir(), nil, "ls-remote", "--heads", "--", url); err != nil {
		return fmt.Errorf("the remote %s cannot be reached: %w", url, err)
	}
	return nil
}

var cloneLocks sync.Map // clone directory → *sync.Mutex

// Clone is the clone of the remote at url kept under root, made on first
// use (without a checkout: its worktrees are what is checked out), and
// opened as a Repo. Two workers never share one: root is a worker's own.
func Clone(ctx context.Context, root, url string) (*Repo, error) {
	if err := checkGit(ctx); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	mu, _ := cloneLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if !isDir(filepath.Join(dir, ".git")) {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		_ = os.RemoveAll(dir) // a clone a dead worker left half made
		tmp := dir + ".new"
		_ = os.RemoveAll(tmp)
		if _, err := run(ctx, root, nil, "clone", "--quiet", "--no-checkout", "--", url, tmp); err != nil {
			return nil, fmt.Errorf("cloning %s: %w", url, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	return Open(ctx, dir)
}

// remoteRef is where a fetched branch of url is kept in a clone: apart
// from the clone's own branches, which its worktrees check out.
func remoteRef(branch string) string { return "refs/flow-remote/" + branch }

// FetchCommit makes sure the clone holds commit, fetching it from url
// (by its id, or with every branch where the remote does not serve
// commits by id).
func (r *Repo) FetchCommit(ctx context.Context, url, commit string) error {
	if _, ok, err := r.Commit(ctx, commit); err != nil || ok {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	if _, err := run(ctx, r.Top, nil, "fetch", "--quiet", "--no-tags", "--", url, commit); err == nil {
		return nil
	}
	if _, err := run(ctx, r.Top, nil, "fetch", "--quiet", "--no-tags", "--", url, "+refs/heads/*:refs/flow-remote/*"); err != nil {
		return fmt.Errorf("fetching %s from %s: %w", commit, url, err)
	}
	if _, ok, err := r.Commit(ctx, commit); err != nil || !ok {
		return fmt.Errorf("the remote %s does not hold commit %s (push it there first)", url, commit)
	}
	return nil
}

// FetchBranch fetches branch from url and returns its head there; ok is
// false when the remote has no such branch.
func (r *Repo) FetchBranch(ctx context.Context, url, branch string) (head string, ok bool, err error) {
	r.mu.Lock()
	rctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	out, err := run(rctx, r.Top, nil, "ls-remote", "--heads", "--", url, "refs/heads/"+branch)
	if err == nil && strings.TrimSpace(out) != "" {
		_, err = run(rctx, r.Top, nil, "fetch", "--quiet", "--no-tags", "--", url, "+refs/heads/"+branch+":"+remoteRef(branch))
	}
	cancel()
	r.mu.Unlock()
	if err != nil {
		return "", false, fmt.Errorf("fetching %s from %s: %w", branch, url, err)
	}
	if strings.TrimSpace(out) == "" {
		return "", false, nil
	}
	return r.Commit(ctx, remoteRef(branch))
}

// Push sets branch on the remote at url to commit. Without force it moves
// only forward (a landing); with force it is set whatever it was (a
// scope's branch, which only its scope writes).
func (r *Repo) Push(ctx context.Context, url, commit, branch string, force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	spec := commit + ":refs/heads/" + branch
	if force {
		spec = "+" + spec
	}
	if _, err := run(ctx, r.Top, nil, "push", "--quiet", "--no-verify", "--", url, spec); err != nil {
		return fmt.Errorf("pushing %s to %s: %w", branch, url, err)
	}
	return nil
}

// Landed finds the landing of scope of run runID among the first-parent
// history of tip: the commit whose message carries the trailers
// Flow-Run: runID and Flow-Scope: scope, or "" when none does. It is what
// makes a landing retried after its worker died land nothing twice.
func (r *Repo) Landed(ctx context.Context, tip, runID, scope string) (string, error) {
	out, err := run(ctx, r.Top, nil, "log", "--first-parent", "--format=%H%x00%B%x1e", tip)
	if err != nil {
		return "", err
	}
	for _, rec := range strings.Split(out, "\x1e") {
		id, body, ok := strings.Cut(strings.TrimLeft(rec, "\n"), "\x00")
		if !ok {
			continue
		}
		var ofRun, ofScope bool
		for _, line := range strings.Split(body, "\n") {
			ofRun = ofRun || strings.TrimSpace(line) == "Flow-Run: "+runID
			ofScope = ofScope || strings.TrimSpace(line) == "Flow-Scope: "+scope
		}
		if ofRun && ofScope {
			return id, nil
		}
	}
	return "", nil
}

// Files lists the files changed between commits from and to.
func (r *Repo) Files(ctx context.Context, from, to string) ([]string, error) {
	out, err := run(ctx, r.Top, nil, "diff", "--name-only", "-z", "--no-renames", from, to)
	if err != nil {
		return nil, err
	}
	return splitZ(out), nil
}

// SetBranch sets branch name to commit at, whatever it was: a clone's copy
// of a branch whose truth is the remote's.
func (r *Repo) SetBranch(ctx context.Context, name, at string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := run(ctx, r.Top, nil, "update-ref", "-m", "flow: as the remote has it", "refs/heads/"+name, at)
	return err
}

// DeleteRemote deletes branch on the remote at url, and every branch
// under branch + ".pending/"; branches that are not there are no error.
func (r *Repo) DeleteRemote(ctx context.Context, url, branch string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	out, err := run(ctx, r.Top, nil, "ls-remote", "--heads", "--", url, "refs/heads/"+branch, "refs/heads/"+branch+".pending/*")
	if err != nil {
		return fmt.Errorf("listing %s on %s: %w", branch, url, err)
	}
	args := []string{"push", "--quiet", "--no-verify", "--", url}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if _, ref, ok := strings.Cut(line, "\t"); ok {
			args = append(args, ":"+ref)
		}
	}
	if len(args) == 5 {
		return nil
	}
	if _, err := run(ctx, r.Top, nil, args...); err != nil {
		return fmt.Errorf("deleting %s on %s: %w", branch, url, err)
	}
	return nil
}

// OnRemote reports whether commit is on one of the branches of the remote
// at url, as far as this repository can tell without fetching: a branch
// head there that this repository holds and that has commit in its
// history (a commit pushed from here, or fetched since).
func (r *Repo) OnRemote(ctx context.Context, url, commit string) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	out, err := run(rctx, r.Top, nil, "ls-remote", "--heads", "--", url)
	cancel()
	if err != nil {
		return false, fmt.Errorf("the remote %s cannot be reached: %w", url, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		sha, _, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		if _, have, err := r.Commit(ctx, sha); err != nil || !have {
			continue
		}
		if in, err := r.IsAncestor(ctx, commit, sha); err == nil && in {
			return true, nil
		}
	}
	return false, nil
}
