package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Lock is the content of lock.json: who runs the run. The same file
// format locks other things a process must hold alone (flow serve's
// directory, through TakeLock).
type Lock struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Addr is where the holder listens, for a lock that flow serve holds.
	Addr string `json:"addr,omitempty"`
}

// ErrLocked is returned when another live process holds the run.
var ErrLocked = errors.New("the run is held by another live process")

// acquireLock creates lock.json exclusively.
func acquireLock(dir string) error { return TakeLock(filepath.Join(dir, lockFile), "") }

// TakeLock creates the lock file path exclusively for this process, with
// its pid, host and addr. A lock left by a dead process on this host is
// taken over; the takeover itself is exclusive (a path.takeover file), so
// two takers cannot both win. A lock a live process holds is an error
// wrapping ErrLocked that names the holder. ReleaseLock gives it back.
func TakeLock(path, addr string) error {
	host, _ := os.Hostname()
	mine, _ := json.Marshal(Lock{PID: os.Getpid(), Host: host, Addr: addr})
	for range 3 {
		err := createWhole(path, mine)
		if err == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("taking the lock %s: %w", path, err)
		}
		held, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile: try again
		}
		var l Lock
		if json.Unmarshal(held, &l) == nil {
			if l.Host != host {
				return fmt.Errorf("%w: pid %d on host %s (remove %s if that host is gone)", ErrLocked, l.PID, l.Host, path)
			}
			if alive(l.PID) {
				return fmt.Errorf("%w: pid %d holds %s", ErrLocked, l.PID, path)
			}
		}
		if err := takeOver(path, held); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %s keeps changing", ErrLocked, path)
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

// takeOver removes a stale lock, provided it still holds what was read.
func takeOver(path string, stale []byte) error {
	tk := path + ".takeover"
	f, err := os.OpenFile(tk, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("%w: another process is taking %s over", ErrLocked, path)
	}
	defer func() { _ = f.Close(); _ = os.Remove(tk) }()
	now, err := os.ReadFile(path)
	if err != nil || string(now) != string(stale) {
		return nil // changed meanwhile: the caller looks again
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale lock %s: %w", path, err)
	}
	return nil
}

func releaseLock(dir string) error { return ReleaseLock(filepath.Join(dir, lockFile)) }

// ReleaseLock removes a lock file TakeLock took.
func ReleaseLock(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing lock: %w", err)
	}
	return nil
}

func readLock(dir string) (*Lock, error) { return ReadLock(filepath.Join(dir, lockFile)) }

// ReadLock reads a lock file.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
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
	return err == nil && l.Live()
}

// Live reports whether the lock's holder is a live process on this host.
func (l *Lock) Live() bool {
	host, _ := os.Hostname()
	return host == l.Host && alive(l.PID)
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
