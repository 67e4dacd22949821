package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// RecordType names a line of serve.jsonl.
type RecordType string

// The records of serve.jsonl (docs/serve.md).
const (
	// RecordServe marks a server's start (PID, Addr).
	RecordServe RecordType = "serve"
	// RecordFire is a schedule's fire that started or queued a run: At is
	// the time it was due, Run the run it made.
	RecordFire RecordType = "fire"
	// RecordSkip is a fire that made no run (overlap: skip), with Reason.
	RecordSkip RecordType = "skip"
	// RecordRun is a run the server started (Trigger says why) or resumed:
	// the runs a later server may resume.
	RecordRun RecordType = "run"
	// RecordStop is a run stopped through the API: a later server leaves
	// it stopped.
	RecordStop RecordType = "stop"
	// RecordShutdown is a run the server stopped as it shut down: the next
	// server resumes it.
	RecordShutdown RecordType = "shutdown"
	// RecordBroken is a flow file that does not load, with its faults in
	// Reason.
	RecordBroken RecordType = "broken"
)

// Record is one line of serve.jsonl.
type Record struct {
	Time    time.Time  `json:"time"`
	Type    RecordType `json:"type"`
	Flow    string     `json:"flow,omitempty"`
	Run     string     `json:"run,omitempty"`
	At      time.Time  `json:"at,omitzero"`
	Trigger string     `json:"trigger,omitempty"` // schedule | catchup | api | resume
	Reason  string     `json:"reason,omitempty"`
	PID     int        `json:"pid,omitempty"`
	Addr    string     `json:"addr,omitempty"`
}

// stateLog is serve.jsonl open for appending: valid JSONL at every moment,
// read whole when a server starts. Safe for concurrent use.
type stateLog struct {
	mu   sync.Mutex
	file *os.File
}

// openState reads the records of path and opens it for appending. A torn
// last line (a server killed mid-write) is skipped. DIR may come with a
// repository, so serve.jsonl is opened without following a link and
// without waiting on a FIFO: anything but a regular file is an error.
func openState(path string) (*stateLog, []Record, error) {
	var recs []Record
	f, err := openRegular(path, os.O_RDONLY)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	default:
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				recs = append(recs, r)
			}
		}
		err := sc.Err()
		_ = f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	w, err := openRegular(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return &stateLog{file: w}, recs, nil
}

// openRegular opens path with flag, not through a symbolic link and not
// waiting on a FIFO; what it opens must be a regular file.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: flow serve does not write through links", path)
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// add appends r, stamped with the time if it has none. A record that
// cannot be written is reported; the server goes on (the log is what the
// next server reads, not what this one needs).
func (l *stateLog) add(r Record) error {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return errors.New("the state log is closed")
	}
	if _, err := l.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing serve.jsonl: %w", err)
	}
	return nil
}

func (l *stateLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// pastState is what a server needs from the records of the ones before it.
type pastState struct {
	owned    []string             // runs a server started, in order
	last     map[string]Record    // the last run/stop/shutdown record of each run
	lastFire map[string]time.Time // the last fire (made or skipped) of each flow
	recent   []Record             // the last fires and skips, for the page
}

func readPast(recs []Record) pastState {
	p := pastState{last: map[string]Record{}, lastFire: map[string]time.Time{}}
	for _, r := range recs {
		switch r.Type {
		case RecordRun:
			if _, seen := p.last[r.Run]; !seen {
				p.owned = append(p.owned, r.Run)
			}
			p.last[r.Run] = r
		case RecordStop, RecordShutdown:
			p.last[r.Run] = r
		case RecordFire, RecordSkip:
			if r.At.After(p.lastFire[r.Flow]) {
				p.lastFire[r.Flow] = r.At
			}
			p.recent = append(p.recent, r)
		}
	}
	if n := len(p.recent); n > recentFires {
		p.recent = p.recent[n-recentFires:]
	}
	return p
}

// recentFires is how many fires and skips the page shows.
const recentFires = 50
