package secret

import (
	"bytes"
	"io"
	"sync"
)

// Writer redacts a stream on its way to an underlying writer. A secret
// split across writes is still found: the end of a write that could begin
// a secret is held back until the next write or Flush says what follows.
// Text that cannot begin a secret passes at once, so a live log stays live.
// A Writer is safe for concurrent use; call Flush when the stream ends.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	r    *Redactor
	held []byte
}

// Writer returns a Writer that writes to w with r's secrets redacted.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{w: w, r: r} }

// SetRedactor makes later writes redact r's secrets: a command learns
// secrets as it reads its configuration and its flow.
func (w *Writer) SetRedactor(r *Redactor) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.r = r
}

// Write redacts p and writes what is settled. It reports len(p) written
// unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r.Empty() && len(w.held) == 0 {
		return w.w.Write(p)
	}
	buf := p
	if len(w.held) > 0 {
		buf = append(w.held, p...)
	}
	// Secrets complete in buf are replaced first; then the end that could
	// begin one waits.
	buf = w.r.Bytes(buf)
	keep := w.r.pending(buf)
	out := buf[:len(buf)-keep]
	w.held = bytes.Clone(buf[len(buf)-keep:])
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what was held back. The Writer stays usable.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	held := w.held
	w.held = nil
	_, err := w.w.Write(w.r.Bytes(held))
	return err
}

// Cut ends the stream where the writer cuts it short (a log that keeps
// only its first bytes): what is held back, the start of a secret whose
// rest will not come, is masked if it is HoldFrom bytes or more, as
// Lines masks it, instead of written. The Writer stays usable.
func (w *Writer) Cut() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.held
	w.held = nil
	switch {
	case len(held) == 0:
		return nil
	case len(held) >= HoldFrom:
		held = []byte(Mask)
	}
	_, err := w.w.Write(held)
	return err
}

// ReadFrom writes everything rd yields, redacted, in bounded pieces.
func (w *Writer) ReadFrom(rd io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		m, err := rd.Read(buf)
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Unwrap returns the writer w writes to.
func (w *Writer) Unwrap() io.Writer { return w.w }
