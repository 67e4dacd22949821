package agentcli

import "bytes"

// LineWriter is an io.Writer that calls a function with every complete line
// written to it, however long, newline included, counting lines from 1 —
// blank ones too, so that the numbers in diagnostics match the stream.
// Writes may split lines anywhere, as a pipe does. It is used by one
// goroutine at a time; its zero value is not usable; call NewLineWriter.
type LineWriter struct {
	each func(n int, line []byte)
	buf  []byte
	n    int
}

// NewLineWriter returns a LineWriter that calls each.
func NewLineWriter(each func(n int, line []byte)) *LineWriter {
	return &LineWriter{each: each}
}

// Write hands on every line p completes. It never fails.
func (w *LineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
}

// Flush hands on a last line without a newline. Call it once the writing
// has ended.
func (w *LineWriter) Flush() {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func (w *LineWriter) emit(line []byte) {
	w.n++
	w.each(w.n, line)
}
