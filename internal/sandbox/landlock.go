package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// HelperArg is the first argument with which flow runs itself as the
// Landlock confinement's helper (Exec): a hidden command no one types.
const HelperArg = "__sandbox-exec"

// helper is the program that serves HelperArg: flow itself (SetHelper).
var helper string

// SetHelper names the program that serves HelperArg, for the Landlock
// confinement: the flow binary, which calls Exec when it is run so. The
// command line calls it once at start, before anything is confined.
func SetHelper(program string) { helper = program }

// Helper returns how the running program may be run again as the helper:
// its own path as it was started (a link named flow stays a link named
// flow), made absolute, else the executable's path.
func Helper() string {
	arg0 := os.Args[0]
	if filepath.IsAbs(arg0) {
		return arg0
	}
	if filepath.Base(arg0) != arg0 {
		if abs, err := filepath.Abs(arg0); err == nil {
			return abs
		}
	}
	exe, _ := os.Executable()
	return exe
}

// landlockABI is the Landlock ABI the kernel offers, 0 when none.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// WrapLandlock returns the command line that runs argv in dir through
// the helper: Exec with dir and tmp writable.
func WrapLandlock(helper, dir, tmp string, argv []string) []string {
	return append([]string{helper, HelperArg, filepath.Clean(dir), tmp, "--"}, argv...)
}

// Exec is the helper's body: args are the working directory, the
// temporary directory, "--" and the command. It moves into a network
// namespace of its own (only a loopback, brought up), confines the file
// system with Landlock — everything readable, only the two directories
// and the terminal devices writable — changes to the working directory
// and executes the command in place. It returns only on failure.
//
// Landlock adds rights and never takes them away beneath a directory, so
// the working directory's .git stays writable under this confinement;
// bubblewrap's keeps it read-only (docs/native.md).
func Exec(args []string) error {
	if len(args) < 4 || args[2] != "--" {
		return errors.New("usage: " + HelperArg + " DIR TMP -- COMMAND…")
	}
	dir, tmp, argv := args[0], args[1], args[3:]
	runtime.LockOSThread() // namespaces are the thread's: the exec must be this one's
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("a network namespace of its own: %w", err)
	}
	loopbackUp()
	err := landlock.V5.BestEffort().RestrictPaths(
		landlock.RODirs("/"),
		landlock.RWDirs(dir, tmp),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/urandom", "/dev/random").IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("confining the file system with Landlock: %w", err)
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return syscall.Exec(path, argv, os.Environ())
}

// loopbackUp brings up the new namespace's loopback, as bubblewrap does,
// so that a test the command runs may listen on 127.0.0.1.
func loopbackUp() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return
	}
	if unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr) != nil {
		return
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	_ = unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
