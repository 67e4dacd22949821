package engine

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// spool writes a file of the run directory whole — aside, then renamed
// into place, so that a reader never sees half of it — through a pooled
// buffer that is written out each time it fills. The files a run writes at
// its end (output.json, usage.json) grow with its visits; gathering each
// whole in one growing slice was a quarter of what a 1,000-item map
// allocated.
type spool struct {
	b   []byte // what is not written yet; encoders append to it
	w   io.Writer
	err error // the first write's
}

// writeSpooled creates name in the run directory with what fill appends
// to the spool. fill calls spool.flush at points where the file may be
// cut, e.g. after each item of a long list.
func (s *store) writeSpooled(name string, fill func(sp *spool) error) error {
	tmp := filepath.Join(s.dir, "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	buf := writeBuffers.Get().(*[]byte)
	sp := &spool{b: (*buf)[:0], w: f}
	err = fill(sp)
	sp.write()
	*buf = sp.b[:0]
	if cap(*buf) <= 4*writeBuffer { // one huge value does not stay around
		writeBuffers.Put(buf)
	}
	if err == nil {
		err = sp.err
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
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
