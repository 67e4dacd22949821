package delegatetest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// Processes lists the live (non-zombie) processes whose command line
// holds marker: a test gives its MCP server an agent of an unusual name
// and checks none is left once the turn has ended.
func Processes(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
