package proc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// groups are the process groups of each run's commands that still had a
// member when their leader was waited for (a daemon a step left in its
// group), by run id: what EndRun ends. A group whose leader was waited for
// and that had no member left is forgotten at once.
var groups = struct {
	sync.Mutex
	byRun map[string]map[int]bool
}{byRun: map[string]map[int]bool{}}

// subreaping is set once this process is its descendants' subreaper.
var (
	subreaping  atomic.Bool
	subreapOnce sync.Once
)

// Subreap makes this process the subreaper of its descendants
// (PR_SET_CHILD_SUBREAPER): a process a step leaves behind, whose parent
// exits, becomes this process's child instead of init's, so EndRun finds
// it among this process's children without reading every process on the
// machine. A process that runs one command and exits (flow run, resume,
// test, sweep) calls it; a long-lived one (flow serve, flow worker) does
// not, since the orphans that end by themselves would stay its zombies:
// EndRun scans /proc there instead. It reports whether it took effect.
func Subreap() bool {
	subreapOnce.Do(func() {
		if unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil {
			subreaping.Store(true)
		}
	})
	return subreaping.Load()
}

// addGroup records the process group pgid of a command of runID.
func addGroup(runID string, pgid int) {
	groups.Lock()
	defer groups.Unlock()
	g := groups.byRun[runID]
	if g == nil {
		g = map[int]bool{}
		groups.byRun[runID] = g
	}
	g[pgid] = true
}

// settleGroup is called once the leader of pgid was waited for: a group
// with no member left is forgotten (its id may be reused by anyone now);
// one with members keeps its id while they live, for EndRun.
func settleGroup(runID string, pgid int) {
	if groupAlive(pgid) {
		return
	}
	groups.Lock()
	defer groups.Unlock()
	delete(groups.byRun[runID], pgid)
	if len(groups.byRun[runID]) == 0 {
		delete(groups.byRun, runID)
	}
}

// groupAlive reports whether the process group pgid has a member.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// scanned counts full /proc scans, for a test.
var scanned atomic.Int64

// EndRun ends every process the run runID left, as KillTagged does, but
// knows where they are rather than reading every process on the machine:
// the process groups of the run's commands that still have members, and,
// in a subreaper (Subreap), the descendants of this process carrying a tag
// of the run — the orphans of its steps, daemons that left their group or
// session included. Without the subreaper, or if the kernel does not list
// a process's children, it is KillTagged. It is called when a run ends,
// after every command of the run was waited for; it returns how many
// processes and groups it signalled.
func EndRun(runID string, grace time.Duration) (int, error) {
	if runID == "" {
		return 0, errors.New("ending a run's processes: empty run id")
	}
	groups.Lock()
	left := groups.byRun[runID]
	delete(groups.byRun, runID)
	groups.Unlock()
	match := runTags(runID)
	var tree []int
	if subreaping.Load() {
		var ok bool
		if tree, ok = taggedDescendants(os.Getpid(), match); !ok {
			return KillTagged(runID, grace)
		}
	} else {
		return KillTagged(runID, grace)
	}
	var pgids []int
	for pgid := range left {
		// The leader was waited for: a process with its id now is someone
		// else, whose group this may be. Leave it alone.
		if _, err := os.Stat("/proc/" + strconv.Itoa(pgid)); err != nil && groupAlive(pgid) {
			pgids = append(pgids, pgid)
		}
	}
	if len(tree) == 0 && len(pgids) == 0 {
		return 0, nil
	}
	if grace <= 0 {
		grace = DefaultGrace
	}
	end(match, tree, pgids, time.Now().Add(grace))
	return len(tree) + len(pgids), nil
}

// end sends SIGTERM to the processes and groups, waits for them to go
// until deadline, SIGKILLs what is left and waits at most killWait more.
// The processes are this process's children or their descendants: the
// children among them are reaped here, as nobody else waits for them.
func end(match matcher, pids, pgids []int, deadline time.Time) {
	mine := map[int]bool{}
	for _, pid := range pids {
		mine[pid] = true
	}
	sig := func(s syscall.Signal) {
		for _, g := range pgids {
			_ = syscall.Kill(-g, s)
		}
		for pid := range mine {
			_ = syscall.Kill(pid, s)
		}
	}
	alive := func() bool {
		for pid := range mine {
			var ws syscall.WaitStatus
			if n, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); n == pid {
				delete(mine, pid)
			}
		}
		now, _ := taggedDescendants(os.Getpid(), match)
		for _, pid := range now {
			mine[pid] = true
		}
		live := slicesFilter(pgids, groupAlive)
		return len(now) > 0 || len(live) > 0
	}
	sig(syscall.SIGTERM)
	delay := 5 * time.Millisecond
	for alive() && time.Until(deadline) > 0 {
		sig(syscall.SIGTERM) // those that appeared since
		time.Sleep(min(delay, time.Until(deadline)))
		delay = min(2*delay, 100*time.Millisecond)
	}
	for deadline = time.Now().Add(killWait); ; time.Sleep(5 * time.Millisecond) {
		sig(syscall.SIGKILL)
		if !alive() || time.Until(deadline) <= 0 {
			return
		}
	}
}

func slicesFilter(s []int, keep func(int) bool) []int {
	var out []int
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// taggedDescendants returns the live descendants of pid whose environment
// carries a tag match wants, walking /proc/<pid>/task/*/children down
// from pid. ok is false when the kernel does not list children.
func taggedDescendants(pid int, match matcher) (out []int, ok bool) {
	kids, ok := children(pid)
	if !ok {
		return nil, false
	}
	buf := make([]byte, 0, 16<<10)
	seen := map[int]bool{pid: true}
	for len(kids) > 0 {
		p := kids[0]
		kids = kids[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		name := strconv.Itoa(p)
		if buf = readEnviron(buf[:0], name); tagged(buf, match) {
			out = append(out, p)
		}
		// An untagged process (one that cleared its environment) may
		// still have tagged children.
		more, _ := children(p)
		kids = append(kids, more...)
	}
	return out, true
}

// children lists the children of pid, from every thread's children file.
func children(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	tids, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return nil, false
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid + "/children")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && pid == os.Getpid() {
				if _, serr := os.Stat(dir + "/" + tid); serr == nil {
					return nil, false // the kernel has no children files
				}
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, true
}
