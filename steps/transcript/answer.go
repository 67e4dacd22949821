package transcript

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
)

// Answer collects a turn's answer as it arrives, so that a driver holds at
// most engine.AnswerLimit bytes of it, however long it grows: the first
// AnswerLimit bytes stay in memory, and once the answer outgrows them the
// whole of it is streamed, redacted, to a new answer file in the home
// (rundir.CreateAnswerFile). Result hands the prefix and the file on in
// the turn's result: the answer is stored once, there.
//
// Its zero value is not usable; call NewAnswer. An Answer is used by one
// goroutine at a time.
type Answer struct {
	home, agent string
	secrets     *secret.Redactor
	head        []byte
	size        int64
	blank       bool // nothing but white space so far
	f           *os.File
	w           *secret.Writer
	err         error
}

// NewAnswer returns an empty Answer of agent, whose file, if it needs one,
// goes into home. Without a home a long answer is cut to its prefix (the
// error of Close says so).
func NewAnswer(home, agent string, secrets *secret.Redactor) *Answer {
	return &Answer{home: home, agent: agent, secrets: secrets, blank: true}
}

// Write adds p to the answer. It never fails, so that a program writing
// its answer is never left blocked: an answer file that cannot be written
// is Close's error, and the answer is then cut to its prefix.
func (a *Answer) Write(p []byte) (int, error) {
	a.size += int64(len(p))
	if a.blank && len(bytes.TrimSpace(p)) > 0 {
		a.blank = false
	}
	if a.f == nil && a.err == nil && len(a.head)+len(p) > engine.AnswerLimit {
		a.spill()
	}
	if room := engine.AnswerLimit - len(a.head); room > 0 {
		a.head = append(a.head, p[:min(room, len(p))]...)
	}
	if a.w != nil && a.err == nil {
		if _, err := a.w.Write(p); err != nil {
			a.err = err
		}
	}
	return len(p), nil
}

// WriteString adds s to the answer.
func (a *Answer) WriteString(s string) (int, error) { return a.Write([]byte(s)) }

// spill opens the answer file and writes the head into it.
func (a *Answer) spill() {
	if a.home == "" {
		a.err = errors.New("the answer is longer than flow keeps in memory and the turn has no home to store it in; it was cut")
		return
	}
	f, err := rundir.CreateAnswerFile(a.home, a.agent)
	if err != nil {
		a.err = err
		return
	}
	a.f, a.w = f, a.secrets.Writer(f)
	if _, err := a.w.Write(a.head); err != nil {
		a.err = err
	}
}

// Size is the whole answer's length so far, in bytes.
func (a *Answer) Size() int64 { return a.size }

// Blank reports whether the answer so far is nothing but white space.
func (a *Answer) Blank() bool { return a.blank }

// String returns the answer when it is short, else its first
// engine.AnswerLimit bytes, cut on a UTF-8 boundary.
func (a *Answer) String() string {
	if a.f == nil && a.size <= engine.AnswerLimit {
		return string(a.head)
	}
	return prefix(string(a.head))
}

// File is the answer file, or "" for an answer that fits in memory.
func (a *Answer) File() string {
	if a.f == nil {
		return ""
	}
	return a.f.Name()
}

// Close ends the answer file, if there is one. It is idempotent and
// returns the first error met while storing the answer.
func (a *Answer) Close() error {
	if a.w != nil {
		if err := a.w.Flush(); err != nil && a.err == nil {
			a.err = err
		}
		if err := a.f.Close(); err != nil && a.err == nil {
			a.err = err
		}
		a.w = nil
	}
	return a.err
}

// Result closes the answer and puts it into res: Output is the answer,
// or its prefix with File and Size when it was stored in a file. trim
// removes trailing white space of a short answer (as a shell's command
// substitution does).
func (a *Answer) Result(res *engine.TurnResult, trim bool) error {
	err := a.Close()
	res.Output = a.String()
	if trim && a.File() == "" {
		res.Output = strings.TrimRight(res.Output, "\r\n")
	}
	if a.File() != "" {
		res.File, res.Size = a.File(), a.size
	}
	return err
}

// StoreAnswer stores an answer longer than engine.AnswerLimit that res
// holds whole (a driver whose parser read it whole) in an answer file in
// home, and leaves the prefix and the file in res. A shorter answer, one
// already in a file, or one without a home (the engine stores it) is left
// alone.
func StoreAnswer(res *engine.TurnResult, home, agent string, secrets *secret.Redactor) error {
	if res.File != "" || len(res.Output) <= engine.AnswerLimit || home == "" {
		return nil
	}
	a := NewAnswer(home, agent, secrets)
	_, _ = io.WriteString(a, res.Output)
	return a.Result(res, false)
}

// prefix cuts s to engine.AnswerLimit bytes on a UTF-8 boundary.
func prefix(s string) string {
	n := engine.AnswerLimit
	if len(s) <= n {
		// The head may end inside a rune the rest of the answer completes.
		for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRuneInString(s[i:]) {
					return s[:i]
				}
				break
			}
		}
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
