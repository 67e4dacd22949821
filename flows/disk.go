package flows

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
)

// Disk is everything a load reads: flow and agent files, directories,
// the working directory and the user's home. The loader imports no os:
// a caller that loads files gives one (package flows/osdisk's OS), and
// Reload uses none, so that a plan compiled again from what a run
// recorded reads nothing by construction — the Temporal workflow calls
// it on workers that need not have the repository (internal/archtest,
// TestTemporalWorkflowIsPureTransitively).
type Disk interface {
	Open(path string) (fs.File, error)
	ReadDir(dir string) ([]fs.DirEntry, error)
	Stat(path string) (fs.FileInfo, error)
	Getwd() (string, error)
	UserHomeDir() (string, error)
}

// ErrNoDisk is what a load without a Disk gets for every read: Load of a
// file needs Options.Disk.
var ErrNoDisk = errors.New("no disk to read from (flows.Options.Disk is not set)")

// noDisk is the Disk of a load given none, and of Reload: nothing is there.
type noDisk struct{}

func (noDisk) Open(path string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNoDisk}
}

func (noDisk) ReadDir(dir string) ([]fs.DirEntry, error) {
	return nil, &fs.PathError{Op: "readdir", Path: dir, Err: ErrNoDisk}
}

func (noDisk) Stat(path string) (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "stat", Path: path, Err: ErrNoDisk}
}

func (noDisk) Getwd() (string, error)       { return "", ErrNoDisk }
func (noDisk) UserHomeDir() (string, error) { return "", ErrNoDisk }

// disk is the Disk a load reads: none for a recorded plan.
func (o Options) disk() Disk {
	if o.Disk == nil || o.recorded {
		return noDisk{}
	}
	return o.Disk
}

// read reads a flow or agent file, at most one byte past the size limit:
// a larger file is refused by the parser without being read whole.
func (o Options) read(path string) ([]byte, error) {
	if src, ok := o.Sources[path]; ok {
		return src, nil
	}
	if o.recorded {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	f, err := o.disk().Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(o.Limits.WithDefaults().FileBytes)+1))
}

// readDir lists dir, or nothing for a recorded plan.
func (o Options) readDir(dir string) ([]fs.DirEntry, error) {
	return o.disk().ReadDir(dir)
}

// workDir is the project directory: WorkDir, else the current directory
// (none for a recorded plan: its working directory is the recorded one).
func (o Options) workDir() string {
	if o.WorkDir != "" || o.recorded {
		return o.WorkDir
	}
	wd, _ := o.disk().Getwd()
	return wd
}

func (o Options) userDirs() []string {
	if o.UserAgentDirs != nil {
		return o.UserAgentDirs
	}
	home, err := o.disk().UserHomeDir()
	if err != nil {
		return nil
	}
	return UserAgentDirs(home)
}

// isDir says whether path is a directory on the load's disk.
func (o Options) isDir(path string) bool {
	st, err := o.disk().Stat(path)
	return err == nil && st.IsDir()
}

// isRepo reports whether dir is inside a git working tree, the way git
// finds one: a .git directory or file in dir or a directory above it. It
// runs nothing. It is gitwork.IsRepo's check, here so that flows — and the
// walker that imports it — imports nothing that runs programs
// (internal/archtest, TestEngineIsPureTransitively).
func (o Options) isRepo(dir string) bool {
	if !filepath.IsAbs(dir) {
		wd := o.workDir()
		if wd == "" {
			return false
		}
		dir = filepath.Join(wd, dir)
	}
	dir = filepath.Clean(dir)
	for {
		if _, err := o.disk().Stat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
