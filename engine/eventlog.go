package engine

import (
	"errors"
	"os"
	"sync"
)

// eventLog is events.jsonl. Events are gathered in a buffer that is
// written when it fills, every flushEvery and when the run ends. A full
// buffer is swapped for an empty one under the lock and written outside
// it, so visits that end while events go to the disk do not queue behind
// the write; writes still keep the events' order. Events are for
// watching a run: the journal, not the events, is what a resume relies on.
type eventLog struct {
	mu      sync.Mutex // guards pending and f
	pending *[]byte
	f       *os.File   // nil once closed
	wmu     sync.Mutex // held while a buffer is written, taken before mu is let go
	err     error      // the first write's error; guarded by wmu
}

// writeBuffer is how many bytes of events, or of a file a run writes at
// its end, are gathered before a write.
const writeBuffer = 64 << 10

var writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, writeBuffer); return &b }}

func openEventLog(path string) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &eventLog{f: f, pending: writeBuffers.Get().(*[]byte)}, nil
}

// add appends one encoded event.
func (l *eventLog) add(line []byte) {
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return
	}
	*l.pending = append(*l.pending, line...)
	if len(*l.pending) < writeBuffer {
		l.mu.Unlock()
		return
	}
	l.write()
}

// flush writes the events gathered so far.
func (l *eventLog) flush() {
	l.mu.Lock()
	if l.f == nil || len(*l.pending) == 0 {
		l.mu.Unlock()
		return
	}
	l.write()
}

// write writes the pending events and lets mu go, which is held.
func (l *eventLog) write() {
	full, f := l.pending, l.f
	l.pending = writeBuffers.Get().(*[]byte)
	l.wmu.Lock()
	l.mu.Unlock()
	defer l.wmu.Unlock()
	l.writeOut(f, full)
}

// writeOut writes a buffer to f and returns it to the pool; wmu is held.
func (l *eventLog) writeOut(f *os.File, full *[]byte) {
	if _, err := f.Write(*full); err != nil && l.err == nil {
		l.err = err
	}
	*full = (*full)[:0]
	if cap(*full) <= 4*writeBuffer { // one huge event does not stay around
		writeBuffers.Put(full)
	}
}

// close writes what is pending and closes the file. It is idempotent.
func (l *eventLog) close() error {
	l.mu.Lock()
	if l.f == nil {
		l.mu.Unlock()
		return nil
	}
	full, f := l.pending, l.f
	l.pending, l.f = nil, nil
	l.wmu.Lock()
	l.mu.Unlock()
	defer l.wmu.Unlock()
	l.writeOut(f, full)
	return errors.Join(l.err, f.Close())
}
