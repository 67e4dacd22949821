package exec

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/steps/transcript"
)

// liveLog is <Home>/<agent>.log: what the program prints, as it prints
// it, for `flow tail`. Both streams are redacted of secrets on their way
// in. Stdout goes there only while the answer is short: a long answer is
// stored once, in its answer file, and the log says where.
type liveLog struct {
	f      *os.File
	mu     sync.Mutex // one write(2) at a time from the two streams
	out    *secret.Writer
	stderr *secret.Writer
}

// openLive opens the live log of a turn, or returns nil for a turn
// without a home or a log that cannot be opened (the turn goes on).
func openLive(t *engine.Turn) *liveLog {
	if t.Home == "" || os.MkdirAll(t.Home, 0o755) != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(t.Home, transcript.FileName(t.Agent.Name)+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil
	}
	l := &liveLog{f: f}
	l.out, l.stderr = t.Secrets.Writer(lockedWriter{l}), t.Secrets.Writer(lockedWriter{l})
	return l
}

// stdout returns the writer of the program's stdout: it passes what it is
// given on while answer has no file, then once names the file and drops
// the rest.
func (l *liveLog) stdout(answer *transcript.Answer) io.Writer {
	return &answerTee{log: l.out, answer: answer}
}

// stderrLog returns the writer of the program's stderr: it passes the
// first transcript.MaxRaw bytes on, then once says the rest is left out
// (the turn keeps stderr's end, transcript.Tail).
func (l *liveLog) stderrLog() io.Writer { return &cappedWriter{w: l.stderr, left: transcript.MaxRaw} }

type cappedWriter struct {
	w    *secret.Writer
	left int64
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	switch {
	case c.left <= 0:
	case int64(len(p)) <= c.left:
		c.left -= int64(len(p))
		_, _ = c.w.Write(p)
	default:
		_, _ = c.w.Write(p[:c.left])
		c.left = 0
		_ = c.w.Cut() // a key the cut splits leaves no start behind
		fmt.Fprintf(c.w, "\n[flow: stderr is longer than %d bytes; the rest is left out here]\n", transcript.MaxRaw)
	}
	return len(p), nil
}

func (l *liveLog) close() {
	_ = l.out.Flush()
	_ = l.stderr.Flush()
	_ = l.f.Close()
}

type lockedWriter struct{ l *liveLog }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.f.Write(p)
}

// answerTee writes stdout to the log until the answer has a file. It is
// written after the answer (io.MultiWriter's order), so the answer has
// its file by the time the write that outgrew AnswerLimit gets here.
type answerTee struct {
	log    io.Writer
	answer *transcript.Answer
	noted  bool
}

func (a *answerTee) Write(p []byte) (int, error) {
	if file := a.answer.File(); file != "" {
		if !a.noted {
			a.noted = true
			fmt.Fprintf(a.log, "\n[flow: the answer is longer than %d bytes; it is stored whole in %s, not here]\n", engine.AnswerLimit, file)
		}
		return len(p), nil
	}
	_, _ = a.log.Write(p) // the log is for watching; the answer is what counts
	return len(p), nil
}
