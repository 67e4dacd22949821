package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/internal/proc"
)

// ErrNoGit is wrapped by every error that says git cannot be used at all:
// it is not installed, not on PATH, or older than 2.38.
var ErrNoGit = errors.New("git is not available")

// Identity is who commits: the author and committer of every commit flow
// makes.
type Identity struct {
	Name  string
	Email string
}

// Error is a git command that exited with a non-zero status.
type Error struct {
	Args   []string
	Exit   int
	Stderr string
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = "exit status " + strconv.Itoa(e.Exit)
	}
	return "git " + strings.Join(e.Args, " ") + ": " + msg
}

// config is set on every command: flow's commits must not run the user's
// hooks (a pre-commit hook written for people), wait for a signing key, or
// start a garbage collection under a running landing.
var config = []string{"-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "-c", "gc.auto=0",
	"-c", "advice.detachedHead=false", "-c", "maintenance.auto=false"}

// dropped are environment variables that would point git at another
// repository, index or work tree than the one a command names.
var dropped = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX"}

func environ(id *Identity) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, d := range dropped {
			drop = drop || name == d
		}
		if !drop {
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	if id != nil {
		env = append(env, "GIT_AUTHOR_NAME="+id.Name, "GIT_AUTHOR_EMAIL="+id.Email,
			"GIT_COMMITTER_NAME="+id.Name, "GIT_COMMITTER_EMAIL="+id.Email)
	}
	return env
}

// lockRetries are the pauses before trying again a command that found one
// of git's lock files taken by another process.
var lockRetries = []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}

// run runs git with args in dir and returns its standard output. A lock
// file held by another process is waited out a few times.
func run(ctx context.Context, dir string, id *Identity, args ...string) (string, error) {
	for attempt := 0; ; attempt++ {
		out, err := runOnce(ctx, dir, id, args...)
		var ge *Error
		if err == nil || !errors.As(err, &ge) || attempt >= len(lockRetries) || !strings.Contains(ge.Stderr, ".lock': File exists") {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(lockRetries[attempt]):
		}
	}
}

func runOnce(ctx context.Context, dir string, id *Identity, args ...string) (string, error) {
	if err := checkGit(ctx); err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	p := proc.Command(ctx, "flow-git", gitPath, append(append([]string{}, config...), args...)...)
	p.Cmd.Dir = dir
	p.Cmd.Env = environ(id)
	p.Cmd.Stdout = &stdout
	p.Cmd.Stderr = &stderr
	if err := p.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("git %s: %w", args[0], context.Cause(ctx))
		}
		status, ok := proc.ExitStatus(err)
		if !ok {
			return "", fmt.Errorf("running git %s: %w", args[0], err)
		}
		return stdout.String(), &Error{Args: args, Exit: status, Stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// exitCode is the status of a git command that exited non-zero, or -1.
func exitCode(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Exit
	}
	return -1
}

var (
	gitOnce sync.Mutex // guards gitPath and gitErr
	gitPath string
	gitErr  error
	gitDone bool
)

// checkGit finds git on PATH and checks its version, once per process.
func checkGit(ctx context.Context) error {
	gitOnce.Lock()
	defer gitOnce.Unlock()
	if gitDone {
		return gitErr
	}
	path, err := exec.LookPath("git")
	if err != nil {
		gitErr = fmt.Errorf("%w: git is not installed or not on PATH; isolation: worktree needs git 2.38 or later", ErrNoGit)
		gitDone = true
		return gitErr
	}
	var out bytes.Buffer
	p := proc.Command(ctx, "flow-git", path, "version")
	p.Cmd.Stdout = &out
	if err := p.Run(); err != nil {
		return fmt.Errorf("%w: running %s version: %v", ErrNoGit, path, err) // not cached: the context may have ended it
	}
	major, minor, ok := parseVersion(out.String())
	switch {
	case !ok:
		gitErr = fmt.Errorf("%w: cannot read the version of %s from %q", ErrNoGit, path, strings.TrimSpace(out.String()))
	case major < 2 || major == 2 && minor < 38:
		gitErr = fmt.Errorf("%w: %s is version %d.%d; isolation: worktree needs git 2.38 or later (merge-tree --write-tree)", ErrNoGit, path, major, minor)
	}
	gitPath, gitDone = path, true
	return gitErr
}

// parseVersion reads "git version 2.39.5" (and vendor suffixes).
func parseVersion(s string) (major, minor int, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, 0, false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// IsRepo reports whether dir is inside a git working tree, the way git
// finds one: a .git directory or file in dir or a directory above it. It
// runs nothing, so a flow can be checked where git is not installed.
func IsRepo(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
