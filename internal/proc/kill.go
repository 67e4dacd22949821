package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killWait bounds the wait for SIGKILLed processes to leave.
const killWait = 500 * time.Millisecond

// KillTagged ends every process that still carries a tag of the run runID:
// SIGTERM to all of them, then SIGKILL to those still alive after grace
// (zero means DefaultGrace). It returns how many processes it signalled. It
// never signals the calling process, and an empty runID is refused so that
// a run without an id cannot reach the processes of other flow processes.
func KillTagged(runID string, grace time.Duration) (int, error) {
	if runID == "" {
		return 0, errors.New("killing tagged processes: empty run id")
	}
	if grace <= 0 {
		grace = DefaultGrace
	}
	match := runTags(runID)
	pids, err := scan(match)
	if err != nil {
		return 0, fmt.Errorf("killing tagged processes: %w", err)
	}
	if len(pids) == 0 {
		return 0, nil
	}
	signal(pids, syscall.SIGTERM)
	reap(0, match, time.Now().Add(grace), pids)
	return len(pids), nil
}

// reap waits until no process matches, polling with a growing interval.
// A matching process that appeared since the first SIGTERM (a fork, or an
// exec that a scan could not see) gets its SIGTERM too. At deadline reap
// SIGKILLs whatever is left and waits at most killWait more for it to go, so
// that a caller finds the processes gone, not dying.
//
// The process group pgid (0 for none) is not polled: kill(-pgid, 0) also
// succeeds for zombies waiting for init, and an init that reaps lazily
// would hold every cancellation for the whole grace period. Group members
// carry the tag anyway; those that cleared their environment get SIGKILL
// when the tagged processes are gone or at deadline.
func reap(pgid int, match matcher, deadline time.Time, termed []int) {
	seen := make(map[int]bool, len(termed))
	for _, pid := range termed {
		seen[pid] = true
	}
	killGroup := func() {
		// The leader has been reaped: a process with its pid now is someone
		// else, whose group this may be. Leave it alone.
		var st syscall.Stat_t
		if pgid != 0 && syscall.Stat("/proc/"+strconv.Itoa(pgid), &st) != nil {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	delay := 5 * time.Millisecond
	for {
		pids, _ := scan(match)
		if len(pids) == 0 {
			killGroup()
			return
		}
		if time.Until(deadline) <= 0 {
			killGroup()
			break
		}
		for _, pid := range pids {
			if !seen[pid] {
				seen[pid] = true
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		time.Sleep(min(delay, time.Until(deadline)))
		delay = min(2*delay, 100*time.Millisecond)
	}
	for deadline = time.Now().Add(killWait); ; time.Sleep(5 * time.Millisecond) {
		pids, _ := scan(match)
		signal(pids, syscall.SIGKILL)
		if len(pids) == 0 || time.Until(deadline) <= 0 {
			return
		}
	}
}

func signal(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// scan returns the processes of our user whose environment carries a tag
// that match wants. Only /proc's directory and each process's environ are
// read: one open and one or two reads per process.
//
// A process in the middle of execve reads as an empty environ for a moment,
// like a zombie or a kernel thread; those that read empty are read once more
// after a short pause so that a process exec'ing right now is not missed.
func scan(match matcher) ([]int, error) {
	scanned.Add(1)
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("scanning processes: %w", err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("scanning processes: %w", err)
	}
	self, uid := os.Getpid(), os.Getuid()
	buf := make([]byte, 0, 64<<10)
	var pids []int
	var empty []string
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if uid == 0 {
			// Root may read every environ; keep to processes of our own user.
			var st syscall.Stat_t
			if syscall.Stat("/proc/"+name, &st) != nil || int(st.Uid) != uid {
				continue
			}
		}
		buf = readEnviron(buf[:0], name)
		switch {
		case len(buf) == 0 && hasProgram(name):
			// Kernel threads and zombies have no program and never will:
			// only a process between exec and its new environment is
			// worth a second look.
			empty = append(empty, name)
		case tagged(buf, match):
			pids = append(pids, pid)
		}
	}
	if len(empty) > 0 {
		time.Sleep(time.Millisecond)
		for _, name := range empty {
			if buf = readEnviron(buf[:0], name); tagged(buf, match) {
				pid, _ := strconv.Atoi(name)
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// hasProgram reports whether a process runs a program (kernel threads and
// zombies do not).
func hasProgram(pid string) bool {
	_, err := os.Readlink("/proc/" + pid + "/exe")
	return err == nil
}

// readEnviron appends /proc/<pid>/environ to buf; a process that is gone or
// not ours reads as empty.
func readEnviron(buf []byte, pid string) []byte {
	f, err := os.Open("/proc/" + pid + "/environ")
	if err != nil {
		return buf
	}
	defer f.Close()
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil { // io.EOF at the end
			return buf
		}
	}
}
