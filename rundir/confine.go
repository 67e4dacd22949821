package rundir

import (
	"errors"
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A run directory is data a repository may carry (a crafted
// .flow/runs/<id>/ committed with it): nothing in it is trusted to point
// elsewhere (docs/run-directory.md). Paths a journal names are used only
// inside the run's own worktrees directory, and the run's files are
// opened without following symbolic links.

// WorktreeInside reports whether path, symbolic links followed, is inside
// the worktrees directory of the run directory runDir. The run directory
// itself must be a directory, not a link, and its worktrees directory is
// taken as it is named: a worktrees/ that is a link to elsewhere puts
// everything under it outside. A path not there yet is resolved through
// its nearest ancestor that is.
func WorktreeInside(runDir, path string) bool {
	st, err := os.Lstat(runDir)
	if err != nil || !st.IsDir() {
		return false
	}
	real, err := filepath.EvalSymlinks(runDir)
	if err != nil {
		return false
	}
	base := filepath.Join(real, worktreesDir)
	p, err := resolve(path)
	if err != nil {
		return false
	}
	return strings.HasPrefix(p, base+string(filepath.Separator))
}

// OwnsWorktree reports whether path is inside the run's worktrees
// directory (WorktreeInside).
func (w *Writer) OwnsWorktree(path string) bool { return WorktreeInside(w.dir, path) }

// resolve returns the absolute path of p with every symbolic link
// followed; the part of p that does not exist yet is kept as written
// (without "..": a path climbing out that way is refused).
func resolve(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// openFile opens a file of the run directory without following a
// symbolic link at its last element: a link where a file of the run
// should be is an error that says so, never a write to what it points at.
func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, linkError(path, err)
	}
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s): a run directory holds files only", path, st.Mode().Type())
	}
	return f, nil
}

// linkError says plainly that path is a symbolic link when err is the
// ELOOP an O_NOFOLLOW open gives for one.
func linkError(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: flow does not read or write a run's files through links", path)
		}
	}
	return err
}

// Confine drops the path of every worktree of ws that is not inside the
// run's worktrees directory, so that a resume neither reuses nor clears
// it, and says so in one note each. A nil Writer (a run recorded
// elsewhere) confines nothing.
func (w *Writer) Confine(ws []*record.Worktree) (notes []string) {
	if w == nil {
		return nil
	}
	for _, wt := range ws {
		if wt.Path != "" && !w.OwnsWorktree(wt.Path) {
			notes = append(notes, fmt.Sprintf("the journal names %s as the worktree of %s, outside the run's worktrees directory: left alone, the scope gets a worktree of its own", wt.Path, wt.Scope))
			wt.Path = ""
		}
	}
	return notes
}

// ReadyWorktree makes the run directory ready to hold the worktree at
// path (KeepOutOfGit), refusing a path outside its worktrees directory (a
// worktrees/ that is a link to elsewhere): what is there is not the run's
// to clear.
func (w *Writer) ReadyWorktree(path string) error {
	if !w.OwnsWorktree(path) {
		return fmt.Errorf("the worktree %s is not inside the run's worktrees directory %s (a symbolic link on the way?): flow does not clear it", path, filepath.Join(w.dir, worktreesDir))
	}
	return w.KeepOutOfGit()
}

// ReadRegular reads the file at path whole, only if it is a regular file:
// not through a link at its last element, never waiting on a FIFO. What a
// run or sweep directory holds is read so.
func ReadRegular(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// sameContent reports whether the file at path (links followed, as a
// flow file may be one) is a regular file holding src. A FIFO or device
// there is not read: it differs.
func sameContent(path, src string) (same, ok bool) {
	st, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	if !st.Mode().IsRegular() {
		return false, true
	}
	if st.Size() != int64(len(src)) {
		return false, true
	}
	now, err := os.ReadFile(path)
	if err != nil {
		return false, false
	}
	return string(now) == src, true
}
