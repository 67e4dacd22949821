package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/internal/secret"
)

// RedactHome redacts, in place, every regular file under the home at path
// (as for Home) that changed at or after since and holds a secret. Flow's
// own writers redact on the way in; this catches what the agent CLIs
// write into a home themselves — pi's sessions, Claude Code's and Codex's
// private configuration directories — which does not pass through them.
// The engine calls it when a leaf visit ends, before its end is
// journaled. A file is rewritten aside and renamed into place, keeping its
// mode; symbolic links are not followed. A JSONL file below the home's own
// files (a CLI's session log) is redacted as a stream of lines
// (secret.Lines), so a key the CLI kept split over many lines is cut out
// too. It returns the files it could not redact, joined.
func (w *Writer) RedactHome(path string, since time.Time) error {
	return RedactTree(w.Home(path), since, w.secrets)
}

// RedactTree is RedactHome of the home at dir with secrets, for homes
// kept outside a run directory's Writer (a Temporal worker's).
func RedactTree(dir string, since time.Time, secrets *secret.Redactor) error {
	if secrets.Empty() {
		return nil
	}
	since = since.Add(-2 * time.Second) // file times are coarser than the clock
	var errs []error
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.ModTime().Before(since) {
			return nil
		}
		redact := redactFile
		if strings.HasSuffix(p, ".jsonl") && filepath.Dir(p) != dir {
			// The home's own transcripts were written through secret.Lines.
			redact = redactLines
		}
		if err := redact(p, info.Mode().Perm(), secrets); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// redactFile rewrites the file at p redacted, if it holds a secret.
func redactFile(p string, mode fs.FileMode, secrets *secret.Redactor) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	defer f.Close()
	found, err := secrets.ContainsReader(f)
	if err != nil || !found {
		return err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".redacting-*")
	if err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	defer os.Remove(tmp.Name())
	rw := secrets.Writer(tmp)
	_, err = rw.ReadFrom(f)
	if err == nil {
		err = rw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	return nil
}

// writeJSONAside writes v as the JSON file at path, as writeAside does,
// with every secret redacted in its string values and in the object keys
// that are not flow's own (secret.Redactor.JSON): whatever a secret's
// value is, the file keeps flow's structure and still loads.
func writeJSONAside(path string, secrets *secret.Redactor, v any) error {
	return writeAside(path, nil, func(bw *bufio.Writer) error {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(v); err != nil {
			return err
		}
		_, err := bw.Write(secrets.JSON(b.Bytes()))
		return err
	})
}

// redactLines rewrites the JSONL file at p through secrets.Lines, if that
// changes any line.
func redactLines(p string, mode fs.FileMode, secrets *secret.Redactor) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".redacting-*")
	if err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 64<<10)
	var originals [][]byte // the lines held, to tell whether any changed
	changed := false
	lines := secrets.Lines(func(line []byte) {
		changed = changed || !bytes.Equal(line, originals[0])
		originals = originals[1:]
		_, _ = bw.Write(line)
		_ = bw.WriteByte('\n')
	})
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if body := bytes.TrimSuffix(line, []byte("\n")); len(body) > 0 || rerr == nil {
			originals = append(originals, body)
			lines.Line(body)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("redacting %s: %w", p, rerr)
		}
	}
	lines.Flush()
	if !changed {
		return nil
	}
	err = bw.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		return fmt.Errorf("redacting %s: %w", p, err)
	}
	return nil
}
