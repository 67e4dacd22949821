package local

import (
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerPID is the id of the process at the other end of conn, from the
// kernel (SO_PEERCRED): what the process says of itself plays no part.
// 0 when it cannot be known.
func peerPID(conn net.Conn) int {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	_ = raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// inTree reports whether the process pid is the process leader, in its
// process group, or a descendant of either (its parents followed up to
// the first process of the machine).
func inTree(pid, leader int) bool {
	for range 64 {
		if pid <= 1 {
			return false
		}
		if pid == leader {
			return true
		}
		ppid, pgid, ok := procStat(pid)
		if !ok {
			return false
		}
		if pgid == leader {
			return true
		}
		pid = ppid
	}
	return false
}

// procStat reads a process's parent and process group from
// /proc/PID/stat (its name, in parentheses, may hold anything: the fields
// are read after its last parenthesis).
func procStat(pid int) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp …
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, err1 == nil && err2 == nil
}
