package flows

import (
	"os"
	"path/filepath"
)

// isRepo reports whether dir is inside a git working tree, the way git
// finds one: a .git directory or file in dir or a directory above it. It
// runs nothing. It is gitwork.IsRepo's check, here so that flows — and the
// walker that imports it — imports nothing that runs programs
// (internal/archtest, TestEngineIsPureTransitively).
func isRepo(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
