package rundir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Worktree returns the directory of the worktree of an isolated scope. It
// is not created here: git makes it.
func (w *Writer) Worktree(scope string) string {
	return filepath.Join(w.dir, worktreesDir, filepath.FromSlash(scopeDir(scope)))
}

// KeepOutOfGit writes a .gitignore that ignores the whole run directory:
// a run that makes worktrees under the working tree of the repository they
// belong to (the default place of runs) must not have them added to it as
// embedded repositories by the user's next `git add -A`. It is idempotent.
func (w *Writer) KeepOutOfGit() error {
	path := filepath.Join(w.dir, ".gitignore")
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# flow: a run directory is not part of the repository\n*\n")
	return errors.Join(err, f.Close())
}

// scopeDir names a scope's directory without the characters that need
// quoting in a shell: look[2] becomes look-2, review#2 review-2.
func scopeDir(scope string) string {
	r := strings.NewReplacer("[", "-", "]", "", "#", "-", "@", "-")
	return r.Replace(scope)
}
