package transcript

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// StderrLimit bounds the standard error a driver keeps of one turn: its
// last StderrLimit bytes, where CLIs put their reason for failing (and an
// exec program its usage line). A program that writes gigabytes there
// costs flow no more than this.
const StderrLimit = 64 << 10

// Tail is an io.Writer that keeps the last StderrLimit bytes written to
// it and counts the rest. It is safe for concurrent use (a process's
// stderr is copied by its own goroutine); its zero value is ready.
type Tail struct {
	mu      sync.Mutex
	buf     []byte
	dropped int64
}

// Write keeps the end of p. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= StderrLimit {
		t.dropped += int64(len(t.buf) + len(p) - StderrLimit)
		t.buf = append(t.buf[:0], p[len(p)-StderrLimit:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - StderrLimit; over > 0 {
		// Drop by halves, so a stream of small writes moves the buffer
		// rarely.
		drop := min(max(over, StderrLimit/2), len(t.buf))
		t.dropped += int64(drop)
		t.buf = append(t.buf[:0], t.buf[drop:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns what was kept, cut at a UTF-8 boundary, saying first how
// much was left out when anything was.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped == 0 {
		return string(t.buf)
	}
	b := t.buf
	for i := 0; i < utf8.UTFMax && i < len(b) && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return fmt.Sprintf("[the first %d bytes of stderr were left out]\n%s", t.dropped, b)
}
