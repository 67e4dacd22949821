package engine

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// spool gathers a file's bytes in a pooled buffer that is written out
// each time it fills. The files a run writes at its end (output.json,
// usage.json) grow with its visits; gathering each whole in one growing
// slice was a quarter of what a 1,000-item map allocated.
type spool struct {
	b   []byte // what is not written yet; encoders append to it
	w   io.Writer
	err error // the first write's
}

// writeSpooled creates name in the run directory (see writeAside) with
// what fill appends to the spool. fill calls spool.flush at points where
// the file may be cut, e.g. after each item of a long list.
func (s *store) writeSpooled(name string, fill func(sp *spool) error) error {
	buf := writeBuffers.Get().(*[]byte)
	err := writeAside(filepath.Join(s.dir, name), func(f *os.File) error {
		sp := &spool{b: (*buf)[:0], w: f}
		err := fill(sp)
		sp.write()
		*buf = sp.b[:0]
		if err != nil {
			return err
		}
		return sp.err
	})
	if cap(*buf) <= 4*writeBuffer { // one huge value does not stay around
		writeBuffers.Put(buf)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// writeAside writes the file at path whole: write fills a file beside it,
// which is then renamed into place, so that a reader never sees half of
// it. The file beside it is removed if anything fails.
func writeAside(path string, write func(f *os.File) error) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// flush writes out what the spool holds once it holds writeBuffer bytes.
func (sp *spool) flush() {
	if len(sp.b) >= writeBuffer {
		sp.write()
	}
}

func (sp *spool) write() {
	if len(sp.b) > 0 && sp.err == nil {
		_, sp.err = sp.w.Write(sp.b)
	}
	sp.b = sp.b[:0]
}
