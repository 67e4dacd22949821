package run

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"
)

const (
	// liveAfter is how long a command runs before its output is also
	// written to <home>/output.log, where flow tail finds it.
	liveAfter = time.Second
	// drainAfterExit bounds the wait for more output after the command
	// exited, when a background descendant keeps the pipe open; what the
	// command wrote is read whole however long that takes
	// (proc.Copier.Finish).
	drainAfterExit = 50 * time.Millisecond
)

// capture keeps a command's output. Short, quick output stays in memory, so
// a step that prints little costs no file and no directory; past
// ReportBytes, or once the command has run for liveAfter, the output goes to
// <home>/output.log as well (created then), so long logs are kept whole and
// a running command can be tailed.
type capture struct {
	home  string
	start time.Time

	mu   sync.Mutex
	mem  []byte   // everything, until spilled
	file *os.File // after spilling
	err  error
}

// Write keeps p; a failure to keep it is the error tail returns, so Write
// itself never fails and the command's output is always read.
func (c *capture) Write(p []byte) (int, error) {
	c.write(p)
	return len(p), nil
}

func (c *capture) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil && c.err == nil && c.home != "" &&
		(len(c.mem)+len(p) > ReportBytes || time.Since(c.start) > liveAfter) {
		c.spill()
	}
	if c.file != nil {
		if _, err := c.file.Write(p); err != nil && c.err == nil {
			c.err = fmt.Errorf("writing output log: %w", err)
		}
		return
	}
	c.mem = append(c.mem, p...)
	if c.home == "" && len(c.mem) > 2*ReportBytes {
		c.mem = append(c.mem[:0], c.mem[len(c.mem)-ReportBytes:]...)
	}
}

// spill moves the output to <home>/output.log; c.mu is held.
func (c *capture) spill() {
	if err := os.MkdirAll(c.home, 0o755); err != nil {
		c.err = fmt.Errorf("creating home: %w", err)
		return
	}
	f, err := os.OpenFile(filepath.Join(c.home, LogName), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		c.err = fmt.Errorf("opening output log: %w", err)
		return
	}
	if _, err := f.Write(c.mem); err != nil {
		c.err = fmt.Errorf("writing output log: %w", err)
	}
	c.file, c.mem = f, nil
}

// tail returns the last n bytes of the output, without a broken UTF-8
// sequence at the start when the cut fell inside one.
func (c *capture) tail(n int64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return "", c.err
	}
	var buf []byte
	if c.file == nil {
		buf = c.mem[max(int64(len(c.mem))-n, 0):]
	} else {
		st, err := c.file.Stat()
		if err != nil {
			return "", err
		}
		off := max(st.Size()-n, 0)
		buf = make([]byte, st.Size()-off)
		if _, err := c.file.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
	}
	if int64(len(buf)) == n {
		for i := 0; i < utf8.UTFMax-1 && len(buf) > 0 && !utf8.RuneStart(buf[0]); i++ {
			buf = buf[1:]
		}
	}
	return string(buf), nil
}

func (c *capture) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil {
		_ = c.file.Close()
		c.file = nil
	}
}
