package proc

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Copier copies the read end of a child's output pipe into a writer, from
// a goroutine of its own, until the output ends or Finish stops it.
//
// Stopping never loses what the child wrote before it exited: a child's
// write to a pipe is complete before the child can exit, so once it has
// exited whatever it wrote is either copied already or still in the
// pipe's buffer. Finish bounds only the wait for more (a descendant that
// inherited the pipe may keep it open); when the bound passes it stops the
// goroutine and then reads the buffer itself, without waiting, up to the
// pipe's capacity — all of what the child left there, however late the
// goroutine was scheduled. A read deadline alone would not do: a Read
// that starts after its deadline fails before it looks at the pipe.
type Copier struct {
	r    *os.File
	w    io.Writer
	done chan struct{}
	err  error // the first write error, after which output is discarded
}

// copyBuffers are the read buffers of running copies, reused so that a map
// of a thousand commands does not allocate a thousand of them.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// StartCopy starts copying r, the read end of a pipe made by os.Pipe whose
// write end only the child holds, into w. The caller keeps r and closes it
// after Finish.
func StartCopy(r *os.File, w io.Writer) *Copier {
	c := &Copier{r: r, w: w, done: make(chan struct{})}
	go c.copy()
	return c
}

// Done is closed when the copying goroutine has returned: at the end of
// the output, or when Finish stopped it.
func (c *Copier) Done() <-chan struct{} { return c.done }

// Err is the first error w returned, if any; the output after it was read
// and discarded, so the child never blocks on a full pipe. Call it after
// Finish.
func (c *Copier) Err() error { return c.err }

func (c *Copier) copy() {
	defer close(c.done)
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	for {
		n, err := c.r.Read(*bp)
		if n > 0 {
			c.write((*bp)[:n])
		}
		if err != nil {
			return // EOF, or Finish's deadline
		}
	}
}

func (c *Copier) write(p []byte) {
	if c.err != nil {
		return
	}
	if _, err := c.w.Write(p); err != nil {
		c.err = err
	}
}

// Finish waits for the end of the output until the time until, which the
// caller sets after the child has exited. It reports whether the output
// ended by itself; false means something still held the pipe open: the
// copying was stopped there, after what the pipe held had been taken.
func (c *Copier) Finish(until time.Time) (ended bool) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case <-c.done:
		return true
	case <-timer.C:
	}
	// A deadline in the past makes a blocked Read, and any later one,
	// return at once; the goroutine is then done with the pipe.
	if err := c.r.SetReadDeadline(time.Unix(1, 0)); err != nil {
		_ = c.r.Close() // not pollable: closing is the only way to stop it
		<-c.done
		return false
	}
	<-c.done
	_ = c.r.SetReadDeadline(time.Time{})
	return c.drain()
}

// drain reads what the pipe holds without waiting for more, up to its
// capacity: a descendant writing without pause cannot keep it going.
// It reports whether it met the end of the output.
func (c *Copier) drain() (ended bool) {
	rc, err := c.r.SyscallConn()
	if err != nil {
		return false
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	_ = rc.Read(func(fd uintptr) bool {
		left, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		if err != nil || left <= 0 {
			left = maxPipe
		}
		for left > 0 {
			n, err := unix.Read(int(fd), buf[:min(len(buf), left)])
			switch {
			case n > 0:
				c.write(buf[:n])
				left -= n
			case errors.Is(err, unix.EINTR):
			case n == 0 && err == nil:
				ended = true
				return true
			default:
				return true // EAGAIN: nothing more is buffered
			}
		}
		return true
	})
	return ended
}

// maxPipe is the largest buffer an unprivileged process can give a pipe
// on Linux (fs.pipe-max-size): the bound when the capacity is unknown.
const maxPipe = 1 << 20
