package rundir

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/flowrun/flow/schema"
)

// The events delivered to a run (docs/waits.md) live in its signals/
// directory, one file per event name, written once: whoever delivers
// (flow signal, flow serve's API and webhook) writes the file whether or
// not a process holds the run, and the run's wait reads it when it is
// reached. A delivery is never overwritten: the same data again is taken
// as delivered already, other data is refused (ErrSignalConflict).
const signalsDir = "signals"

// Signal is one event delivered to a run.
type Signal struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
	By    string          `json:"by,omitempty"`
	Time  time.Time       `json:"time"`
}

// ErrSignalConflict is returned for a delivery of an event the run has
// with other data.
var ErrSignalConflict = errors.New("the event was delivered already with other data")

// Deliver writes event with data (JSON) into the run directory dir. It
// says whether the run had the event already with the same data (then
// nothing changes); other data is an error wrapping ErrSignalConflict.
func Deliver(dir, event string, data []byte, by string, now time.Time) (already bool, err error) {
	if !schema.ValidEventName(event) {
		return false, fmt.Errorf("%q is not a valid event name: letters, digits, _, - and . (at most 128)", event)
	}
	canon, err := canonicalJSON(data)
	if err != nil {
		return false, fmt.Errorf("the data of event %s is not JSON: %w", event, err)
	}
	if _, err := os.Stat(filepath.Join(dir, journalFile)); err != nil {
		return false, fmt.Errorf("%s is not a run directory: %w", dir, err)
	}
	sd := filepath.Join(dir, signalsDir)
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return false, fmt.Errorf("delivering event %s: %w", event, err)
	}
	line, _ := json.Marshal(Signal{Event: event, Data: canon, By: by, Time: now.UTC()})
	tmp, err := os.CreateTemp(sd, ".deliver-*")
	if err != nil {
		return false, fmt.Errorf("delivering event %s: %w", event, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, werr := tmp.Write(append(line, '\n'))
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return false, fmt.Errorf("delivering event %s: %w", event, err)
	}
	// A link is made whole or not at all, and never replaces a file:
	// of two deliveries at once, one wins and the other compares.
	err = os.Link(tmp.Name(), signalPath(dir, event))
	if err == nil {
		return false, syncDir(sd)
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("delivering event %s: %w", event, err)
	}
	had, err := Delivered(dir, event)
	if err != nil || had == nil {
		return false, fmt.Errorf("reading the earlier delivery of event %s: %v", event, err)
	}
	if !bytes.Equal(had.Data, canon) {
		return false, fmt.Errorf("event %s of run %s: %w (at %s)", event, filepath.Base(dir), ErrSignalConflict, had.Time.Format(time.RFC3339))
	}
	return true, nil
}

// Delivered is the event delivered to the run in dir under name, or nil
// when none was.
func Delivered(dir, event string) (*Signal, error) {
	if !schema.ValidEventName(event) {
		return nil, nil
	}
	b, err := os.ReadFile(signalPath(dir, event))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Signal
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", signalPath(dir, event), err)
	}
	return &s, nil
}

// WebhookToken is the token of the webhook that delivers event to the run
// in dir: made (unguessable, 32 random bytes) the first time it is asked
// for, kept in the run directory readable by its owner only.
func WebhookToken(dir, event string) (string, error) {
	if !schema.ValidEventName(event) {
		return "", fmt.Errorf("%q is not a valid event name", event)
	}
	path := filepath.Join(dir, signalsDir, event+".token")
	if b, err := os.ReadFile(path); err == nil && len(b) == 64 {
		return string(b), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	tok := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // made by another at the same time
		b, rerr := os.ReadFile(path)
		return string(b), rerr
	}
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(tok)
	return tok, errors.Join(werr, f.Close())
}

// WebhookTokenOK reports whether tok is the webhook token of event of the
// run in dir, compared in constant time; a token never made is none.
func WebhookTokenOK(dir, event, tok string) bool {
	if !schema.ValidEventName(event) || len(tok) != 64 {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, signalsDir, event+".token"))
	return err == nil && subtle.ConstantTimeCompare(b, []byte(tok)) == 1
}

func signalPath(dir, event string) string {
	return filepath.Join(dir, signalsDir, event+".json")
}

// canonicalJSON is data as one JSON value, compact with sorted keys, so
// that the same data delivered twice compares equal however it was
// spaced.
func canonicalJSON(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return json.Marshal(v)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
