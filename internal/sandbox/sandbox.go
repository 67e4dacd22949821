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
	// Landlock runs the command through flow's helper (Exec): a network
	// namespace and a Landlock ruleset.
	Landlock Kind = "landlock"
	// None means no confinement works here.
	None Kind = "none"
)

// ErrUnavailable says no confinement works on this machine.
var ErrUnavailable = errors.New("no sandbox works on this machine: install bubblewrap (apt-get install bubblewrap), or let the agent run unconfined with sandbox: off")

var detected struct {
	once    sync.Once
	kind    Kind
	program string
	why     string
}

// Detect returns the confinement that works here, and the program that
// runs it; with None, why says what was tried. It probes once per
// process: bwrap (on PATH, and a trial run with Wrap's options: a kernel
// or container that forbids its namespaces fails there), else Landlock
// through the helper (SetHelper) with a trial run. FLOW_SANDBOX=bubblewrap,
// landlock or none takes that one only.
func Detect() (kind Kind, program string, why string) {
	detected.once.Do(func() {
		detected.kind, detected.program, detected.why = probe(Kind(os.Getenv("FLOW_SANDBOX")))
	})
	return detected.kind, detected.program, detected.why
}

func probe(want Kind) (Kind, string, string) {
	var whys []string
	if want == "" || want == Bubblewrap {
		p, why := probeBwrap()
		if why == "" {
			return Bubblewrap, p, ""
		}
		whys = append(whys, why)
	}
	if want == "" || want == Landlock {
		why := probeLandlock()
		if why == "" {
			return Landlock, helper, ""
		}
		whys = append(whys, why)
	}
	if want == None {
		whys = append(whys, "FLOW_SANDBOX=none")
	}
	return None, "", strings.Join(whys, "; ")
}

// trial runs argv briefly, in dir, and says why it failed ("" when not).
func trial(argv []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

func probeBwrap() (string, string) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", "bwrap is not on PATH"
	}
	dir, err := os.MkdirTemp("", "flow-sandbox-probe")
	if err != nil {
		return "", "probing bwrap: " + err.Error()
	}
	defer os.RemoveAll(dir)
	if why := trial(Wrap(p, dir, dir, []string{"true"})); why != "" {
		return "", "bwrap does not work here: " + why
	}
	return p, ""
}

func probeLandlock() string {
	switch {
	case landlockABI() < 1:
		return "the kernel offers no Landlock"
	case helper == "":
		return "no helper for Landlock (flow runs itself as one)"
	}
	dir, err := os.MkdirTemp("", "flow-sandbox-probe")
	if err != nil {
		return "probing Landlock: " + err.Error()
	}
	defer os.RemoveAll(dir)
	if why := trial(WrapLandlock(helper, dir, dir, []string{"true"})); why != "" {
		return "Landlock does not work here: " + why
	}
	return ""
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
	kind, program, why := Detect()
	if kind == None {
		return nil, fmt.Errorf("%w (%s)", ErrUnavailable, why)
	}
	tmp, err := os.MkdirTemp("", "flow-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("making the sandbox's temporary directory: %w", err)
	}
	if kind == Landlock {
		return &Confined{Argv: WrapLandlock(program, dir, tmp, argv), Tmp: tmp}, nil
	}
	return &Confined{Argv: Wrap(program, dir, tmp, argv), Tmp: tmp}, nil
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
