package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/flowrun/flow/internal/secret"
)

// lineFile is an append-only JSONL file: each value is encoded with
// encoding/json and appended as one line by one write(2) on a file opened
// with O_APPEND, under a mutex. A reader (tail -f | jq) sees whole lines
// only, and a crash leaves at most a torn last one.
type lineFile struct {
	mu      sync.Mutex
	f       *os.File // nil once closed
	name    string
	secrets *secret.Redactor
	buf     bytes.Buffer
	enc     *json.Encoder
}

func openLineFile(path string, secrets *secret.Redactor) (*lineFile, error) {
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	l := &lineFile{f: f, name: path, secrets: secrets}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false) // the file is read by people and jq, not put in a page
	return l, nil
}

// append writes v as one line, redacted of secrets; with durable, it is
// also fsynced before append returns. When v held a secret, redacted is
// the line as written (v itself is left alone), else nil.
func (l *lineFile) append(v any, durable bool) (redacted []byte, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil, fmt.Errorf("writing %s: the run directory is closed", l.name)
	}
	l.buf.Reset()
	if err := l.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding a line of %s: %w", l.name, err)
	}
	line := l.buf.Bytes()
	if l.secrets.Contains(line) {
		// Values only, never flow's keys (secret.Redactor.JSON).
		line = l.secrets.JSON(bytes.TrimSuffix(line, []byte("\n")))
		line = append(line, '\n')
		redacted = line
	}
	if _, err := l.f.Write(line); err != nil {
		return redacted, fmt.Errorf("writing %s: %w", l.name, err)
	}
	if l.buf.Cap() > 1<<20 {
		l.buf = bytes.Buffer{} // one huge line does not stay around
		l.enc = json.NewEncoder(&l.buf)
		l.enc.SetEscapeHTML(false)
	}
	if durable {
		if err := l.f.Sync(); err != nil {
			return redacted, fmt.Errorf("syncing %s: %w", l.name, err)
		}
	}
	return redacted, nil
}

// close closes the file. It is idempotent.
func (l *lineFile) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// dropTornLine cuts a JSONL file back to its last whole line: the engine
// that wrote it died mid-write, and new lines must not be glued to the
// fragment.
func dropTornLine(path string) error {
	f, err := openFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	const chunk = 64 << 10
	buf := make([]byte, min(st.Size(), chunk))
	for end := st.Size(); end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && n < int(end-start) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			if keep := start + int64(i) + 1; keep < st.Size() {
				return f.Truncate(keep)
			}
			return nil
		}
		end = start
	}
	return f.Truncate(0)
}
