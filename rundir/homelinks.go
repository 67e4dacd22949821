package rundir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// linkOut returns the first symbolic link under the run's home/ that
// points outside the run directory, or nowhere: the drivers and flow's
// own transcripts write into the homes (creating, appending), so a
// crafted link there (home/<visit> -> ~/.ssh, home/<visit>/<agent>.log ->
// a file elsewhere) would have a resume write through it. A link an
// agent's CLI made inside its own home, to a file of the run, is left
// alone. "" when there is none.
func linkOut(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	var found string
	err = filepath.WalkDir(filepath.Join(dir, homesDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		t, err := filepath.EvalSymlinks(p)
		if err != nil || !strings.HasPrefix(t, real+string(filepath.Separator)) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}

// refuseLinkedHomes is Reopen's check of linkOut.
func refuseLinkedHomes(dir string) error {
	p, err := linkOut(dir)
	if err != nil {
		return fmt.Errorf("resuming %s: reading its homes: %w", dir, err)
	}
	if p != "" {
		return fmt.Errorf("resuming %s: %s is a symbolic link that leads out of the run directory: flow does not write a run's files through links", dir, p)
	}
	return nil
}
