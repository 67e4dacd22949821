package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Lock is the content of lock.json: who runs the run. A pid alone does
// not name a process for long: after the engine dies its pid may be given
// to another process, or the machine may restart. Start (the process's
// start time, in clock ticks since boot, field 22 of /proc/<pid>/stat) and
// Boot (/proc/sys/kernel/random/boot_id) make the lock name one process:
// a live process with the pid but another start time, or any process after
// a restart, does not hold the run. A lock without them (written where
// /proc is missing) is held by any live process with its pid.
type Lock struct {
	PID   int    `json:"pid"`
	Host  string `json:"host"`
	Start uint64 `json:"start,omitempty"`
	Boot  string `json:"boot,omitempty"`
}

// thisProcess is the lock this process writes.
func thisProcess() Lock {
	host, _ := os.Hostname()
	start, _ := processStart(os.Getpid())
	return Lock{PID: os.Getpid(), Host: host, Start: start, Boot: bootID()}
}

// held reports whether the process l names is alive on this host.
func (l *Lock) held() bool {
	if !alive(l.PID) {
		return false
	}
	if l.Boot != "" {
		if boot := bootID(); boot != "" && boot != l.Boot {
			return false // the machine restarted since: the pid is someone else's
		}
	}
	if l.Start != 0 {
		if start, ok := processStart(l.PID); ok && start != l.Start {
			return false // the pid was given to another process
		}
	}
	return true
}

// processStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/<pid>/stat).
func processStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	const startField = 22 - 3 // fields[0] is field 3, the state
	if len(fields) <= startField {
		return 0, false
	}
	start, err := strconv.ParseUint(fields[startField], 10, 64)
	return start, err == nil
}

// bootID returns this boot's id, or "" where the kernel does not say.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ErrLocked is returned when another live process holds the run.
var ErrLocked = errors.New("the run is held by another live process")

// acquireLock creates lock.json exclusively. A lock left by a dead process
// on this host is taken over; the takeover itself is exclusive (a
// lock.json.takeover file), so two resumers cannot both win.
//
// Every message names the lock's path and, when it is known, the pid.
func acquireLock(dir string) error {
	path := filepath.Join(dir, lockFile)
	me := thisProcess()
	mine, _ := json.Marshal(me)
	var l Lock
	for range 3 {
		err := createWhole(path, mine)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("locking run directory: creating %s: %w", path, err)
		}
		held, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile: try again
		}
		l = Lock{}
		if json.Unmarshal(held, &l) == nil {
			if l.Host != me.Host {
				return fmt.Errorf("%w: pid %d on host %s holds %s (remove it if that host is gone)", ErrLocked, l.PID, l.Host, path)
			}
			if l.held() {
				return fmt.Errorf("%w: pid %d holds %s (remove it if pid %d is not a flow running this run)", ErrLocked, l.PID, path, l.PID)
			}
		}
		if err := takeOver(path, held, l.PID); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %s keeps changing (last held by pid %d)", ErrLocked, path, l.PID)
}

// createWhole creates path with content, failing with fs.ErrExist if it
// exists. The file appears with its whole content at once (written aside,
// then hard-linked), so no reader ever sees an empty lock and takes it for
// a stale one.
func createWhole(path string, content []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(f.Name(), path)
}

// takeOver removes a stale lock of pid, provided it still holds what was
// read.
func takeOver(path string, stale []byte, pid int) error {
	tk := path + ".takeover"
	f, err := os.OpenFile(tk, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("%w: another process is taking %s over from pid %d (remove %s if none is)", ErrLocked, path, pid, tk)
	}
	defer func() { _ = f.Close(); _ = os.Remove(tk) }()
	now, err := os.ReadFile(path)
	if err != nil || string(now) != string(stale) {
		return nil // changed meanwhile: the caller looks again
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale lock %s of pid %d: %w", path, pid, err)
	}
	return nil
}

func releaseLock(dir string) error {
	if err := os.Remove(filepath.Join(dir, lockFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing lock: %w", err)
	}
	return nil
}

func readLock(dir string) (*Lock, error) {
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("reading lock: %w", err)
	}
	return &l, nil
}

// heldByLiveProcess reports whether a live process on this host holds the
// run in dir.
func heldByLiveProcess(dir string) bool {
	l, err := readLock(dir)
	if err != nil {
		return false
	}
	host, _ := os.Hostname()
	return host == l.Host && l.held()
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
