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
//
// The same file format locks other things a process must hold alone (flow
// serve's directory, through TakeLock).
type Lock struct {
	PID   int    `json:"pid"`
	Host  string `json:"host"`
	Start uint64 `json:"start,omitempty"`
	Boot  string `json:"boot,omitempty"`
	// Addr is where the holder listens, for a lock that flow serve holds.
	Addr string `json:"addr,omitempty"`
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

// acquireLock creates lock.json exclusively.
func acquireLock(dir string) error { return TakeLock(filepath.Join(dir, lockFile), "") }

// TakeLock creates the lock file path exclusively for this process, with
// its pid, host, start time and addr. A lock left by a dead process on this
// host is taken over; the takeover itself is exclusive (a path.takeover
// file), so two takers cannot both win. A lock a live process holds is an
// error wrapping ErrLocked; every message names the lock's path and, when
// it is known, the pid. ReleaseLock gives it back.
func TakeLock(path, addr string) error {
	me := thisProcess()
	me.Addr = addr
	mine, _ := json.Marshal(me)
	var l Lock
	for range 3 {
		err := createWhole(path, mine)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("taking the lock %s: %w", path, err)
		}
		held, err := ReadRegular(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("taking the lock %s: %w", path, err) // a link, a FIFO: not a lock
		}
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
	now, err := ReadRegular(path)
	if err != nil || string(now) != string(stale) {
		return nil // changed meanwhile: the caller looks again
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale lock %s of pid %d: %w", path, pid, err)
	}
	return nil
}

func releaseLock(dir string) error { return ReleaseLock(filepath.Join(dir, lockFile)) }

// ReleaseLock removes a lock file TakeLock took.
func ReleaseLock(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing lock %s: %w", path, err)
	}
	return nil
}

func readLock(dir string) (*Lock, error) { return ReadLock(filepath.Join(dir, lockFile)) }

// ReadLock reads a lock file (a regular file: not a link, not a FIFO).
func ReadLock(path string) (*Lock, error) {
	b, err := ReadRegular(path)
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("reading lock %s: %w", path, err)
	}
	return &l, nil
}

// heldByLiveProcess reports whether a live process on this host holds the
// run in dir.
func heldByLiveProcess(dir string) bool {
	l, err := readLock(dir)
	return err == nil && l.Live()
}

// Live reports whether the lock's holder is a live process on this host:
// the process it names, not another that was given its pid.
func (l *Lock) Live() bool {
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
