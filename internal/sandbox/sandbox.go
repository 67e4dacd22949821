package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Kind names a confinement.
type Kind string

// The confinements.
const (
	// Bubblewrap runs the command under bwrap.
	Bubblewrap Kind = "bubblewrap"
	// None means no confinement works here.
	None Kind = "none"
)

// ErrUnavailable says no confinement works on this machine.
var ErrUnavailable = errors.New("no sandbox works on this machine: install bubblewrap (apt-get install bubblewrap), or let the agent run unconfined with sandbox: off")

var detected struct {
	once  sync.Once
	bwrap string
	why   string
}

// Detect returns the confinement that works here, and the path of its
// program; with None, why says what was tried. It probes once per
// process: bwrap on PATH, then a trial run of it with the options Wrap
// uses (a kernel without user namespaces, or a container that forbids
// them, fails there).
func Detect() (kind Kind, program string, why string) {
	detected.once.Do(func() {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			detected.why = "bwrap is not on PATH"
			return
		}
		dir, err := os.MkdirTemp("", "flow-sandbox-probe")
		if err != nil {
			detected.why = "probing bwrap: " + err.Error()
			return
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		argv := Wrap(p, dir, dir, []string{"true"})
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			detected.why = fmt.Sprintf("bwrap does not work here: %v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		detected.bwrap = p
	})
	if detected.bwrap != "" {
		return Bubblewrap, detected.bwrap, ""
	}
	return None, "", detected.why
}

// Confined is a command confined to a directory (Confine).
type Confined struct {
	// Argv runs the command confined: bwrap and its options, then the
	// command's own argv.
	Argv []string
	// Tmp is the command's private temporary directory, the only place
	// outside its working directory it may write; Close removes it.
	Tmp string
}

// Close removes the command's temporary directory.
func (c *Confined) Close() error { return os.RemoveAll(c.Tmp) }

// Confine returns the command line that runs argv confined to dir, with a
// private temporary directory; or ErrUnavailable (wrapped, with what was
// tried) when no confinement works here. Give the command Env(…, c.Tmp).
func Confine(dir string, argv []string) (*Confined, error) {
	kind, bwrap, why := Detect()
	if kind == None {
		return nil, fmt.Errorf("%w (%s)", ErrUnavailable, why)
	}
	tmp, err := os.MkdirTemp("", "flow-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("making the sandbox's temporary directory: %w", err)
	}
	return &Confined{Argv: Wrap(bwrap, dir, tmp, argv), Tmp: tmp}, nil
}

// Wrap returns the bwrap command line that runs argv in dir: the whole
// file system read-only, dir and tmp writable but dir's .git read-only,
// /dev and /proc of its own, a network namespace with only its loopback,
// its own process namespace, and the end of the command with the end of
// its parent. The environment is the caller's (give it Env).
func Wrap(bwrap, dir, tmp string, argv []string) []string {
	dir = filepath.Clean(dir)
	args := []string{bwrap,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--bind", tmp, tmp,
		"--bind", dir, dir,
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		args = append(args, "--ro-bind", filepath.Join(dir, ".git"), filepath.Join(dir, ".git"))
	}
	args = append(args, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--chdir", dir, "--")
	return append(args, argv...)
}

// allowed are the variables a confined command keeps from flow's
// environment: what programs need to find themselves and speak the
// user's language, never a credential.
var allowed = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ",
	"GOPATH", "GOROOT", "GOFLAGS", "GOPROXY", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "VIRTUAL_ENV", "NODE_PATH"}

// Env returns the environment of a confined command: the allowed
// variables of environ (and every LC_*), then extra. TMPDIR is tmp, the
// command's private temporary directory, and GOCACHE a directory in it,
// since the user's cache is read-only inside.
func Env(environ []string, tmp string, extra ...string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "LC_") || contains(allowed, k) {
			out = append(out, kv)
		}
	}
	out = append(out, "TMPDIR="+tmp, "GOCACHE="+filepath.Join(tmp, "go-build"))
	return append(out, extra...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
