package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MkdirIgnored is os.MkdirAll for the directories flow keeps its records
// in (runs, sweeps, a served directory's .flow): the topmost directory it
// creates gets a .gitignore of `*`, so that what flow writes never shows
// up in git status nor gets committed by accident. A directory that is
// there already is left as it is: a .flow the project keeps agents and
// configuration in is not hidden, and a .gitignore someone removed is not
// written again. Below a directory flow already ignored (a sweep's cells
// under .flow/sweeps), no second one is written.
func MkdirIgnored(dir string) error {
	top := ""
	for d := filepath.Clean(dir); ; {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			break // MkdirAll reports it
		}
		top = d
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if top == "" || ignoredAbove(top) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(top, ".gitignore"), []byte("*\n"), 0o644); err != nil {
		return fmt.Errorf("ignoring %s in git: %w", top, err)
	}
	return nil
}

// ignoredAbove says whether a directory above dir holds the .gitignore
// MkdirIgnored writes.
func ignoredAbove(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, ".gitignore")); err == nil && string(b) == "*\n" {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}
