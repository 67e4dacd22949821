package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A lock is an exclusive flock(2) on a lock file (lock.json of a run,
// flow serve's serve.lock), held for as long as its holder keeps the file
// open. The kernel drops it when the holder ends, however it ends, so a
// lock is never stale: whoever can take the flock holds the run. The
// file's content names the holder (Lock) for the messages and the pages
// only; it decides nothing, with one exception: a lock written on another
// host is respected, as flock does not reach across machines on every
// shared file system.
type Lock struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Addr is where the holder listens, for a lock that flow serve holds.
	Addr string `json:"addr,omitempty"`

	path string // the lock file it was read from, for Live
}

// thisProcess is the lock this process writes.
func thisProcess() Lock {
	host, _ := os.Hostname()
	return Lock{PID: os.Getpid(), Host: host}
}

// ErrLocked is returned when another live process holds the run.
var ErrLocked = errors.New("the run is held by another live process")

// held are the lock files this process holds, by path: the open file
// carries the flock, and closing it (ReleaseLock) gives the lock back.
var held = struct {
	sync.Mutex
	files map[string]*os.File
}{files: map[string]*os.File{}}

// acquireLock takes the run's lock.json.
func acquireLock(dir string) error { return TakeLock(filepath.Join(dir, lockFile), "") }

// TakeLock takes the lock file path for this process (an exclusive
// flock), writing its pid, host and addr into it as information. A lock
// another process holds — or this one through another TakeLock — is an
// error wrapping ErrLocked; every message names the lock's path and, when
// it is known, the holder's pid. ReleaseLock gives it back.
func TakeLock(path, addr string) error {
	me := thisProcess()
	me.Addr = addr
	mine, _ := json.Marshal(me)
	for range 3 {
		f, err := openFile(path, os.O_RDWR|os.O_CREATE, 0o644) // a link, a FIFO: not a lock
		if err != nil {
			return fmt.Errorf("taking the lock %s: %w", path, err)
		}
		if err := flockNow(f); err != nil {
			l, _ := ReadLock(path)
			_ = f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return lockedError(path, l)
			}
			return fmt.Errorf("taking the lock %s: %w", path, err)
		}
		// The holder before may have removed the file between our open
		// and our flock: a lock on a file no longer at path locks nothing.
		if !samePath(f, path) {
			_ = f.Close()
			continue
		}
		if l, err := ReadLock(path); err == nil && l.Host != "" && l.Host != me.Host {
			_ = f.Close()
			return fmt.Errorf("%w: pid %d on host %s holds %s (remove it if that host is gone)", ErrLocked, l.PID, l.Host, path)
		}
		if err := rewrite(f, mine); err != nil {
			_ = f.Close()
			return fmt.Errorf("taking the lock %s: %w", path, err)
		}
		held.Lock()
		held.files[path] = f
		held.Unlock()
		return nil
	}
	return fmt.Errorf("%w: %s keeps changing", ErrLocked, path)
}

// lockWait is how long TakeLock waits for a flock another process has
// for an instant (Live asking), before it calls the lock held.
const lockWait = 20 * time.Millisecond

// flockNow takes f's exclusive flock, trying once more after lockWait.
func flockNow(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		time.Sleep(lockWait)
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	return err
}

// lockedError says who holds path, as far as its content tells.
func lockedError(path string, l *Lock) error {
	if l == nil || l.PID == 0 {
		return fmt.Errorf("%w: another process holds %s", ErrLocked, path)
	}
	return fmt.Errorf("%w: pid %d holds %s", ErrLocked, l.PID, path)
}

// samePath reports whether f is still the file at path.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// rewrite replaces f's content with b.
func rewrite(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := f.Write(b)
	return err
}

func releaseLock(dir string) error { return ReleaseLock(filepath.Join(dir, lockFile)) }

// ReleaseLock gives back a lock TakeLock took: it removes the file, then
// drops the flock (a taker that opened the file before it went sees that
// it is gone and opens the path again).
func ReleaseLock(path string) error {
	held.Lock()
	f := held.files[path]
	delete(held.files, path)
	held.Unlock()
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if f != nil {
		_ = f.Close()
	}
	if err != nil {
		return fmt.Errorf("removing lock %s: %w", path, err)
	}
	return nil
}

// ReadLock reads what a lock file (a regular file: not a link, not a
// FIFO) says of its holder. Whether anyone still holds it is Live's
// question.
func ReadLock(path string) (*Lock, error) {
	b, err := ReadRegular(path)
	if err != nil {
		return nil, err
	}
	l := Lock{path: path}
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("reading lock %s: %w", path, err)
	}
	return &l, nil
}

// heldByLiveProcess reports whether a live process holds the run in dir.
func heldByLiveProcess(dir string) bool { return flocked(filepath.Join(dir, lockFile)) }

// Live reports whether a live process on this host holds the lock file l
// was read from: its flock is taken. A Lock not read from a file is not
// live.
func (l *Lock) Live() bool {
	if host, _ := os.Hostname(); l.path == "" || l.Host != host {
		return false
	}
	return flocked(l.path)
}

// flocked reports whether someone holds the flock of path. It asks by
// taking a shared flock for an instant; a TakeLock that meets that
// instant tries again (lockWait).
func flocked(path string) bool {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
