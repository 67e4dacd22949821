package engine

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sourcegraph/conc"
)

// journalFile is journal.jsonl as the engine writes it. Facts are copied
// into a shared memory mapping of the file: the bytes land in the kernel's
// page cache exactly as write(2) would put them there — they survive the
// engine's death, and other processes reading the file see them at once —
// but without a system call per fact, which was most of what journaling a
// quick visit cost.
//
// The mapping covers space reserved ahead with fallocate(2), so the file
// is longer than its facts while the run goes on: readers stop at the
// first NUL byte (see ReadJournal), and a resume cuts it back to the last
// whole line. Reserving the blocks first also means a full disk is an
// error from fallocate, never a fault when a fact is copied. Where the file
// system cannot reserve or map, facts are written with write(2) instead.
type journalFile struct {
	f    *os.File
	mem  []byte // the mapping, from offset 0; nil when writing with write(2)
	size int    // the bytes of facts; mem[size:] is reserved and zero

	// The first write to a page of the mapping costs a page fault that
	// makes the file system ready for it: microseconds, in the middle of
	// a visit. A worker does it ahead of the writer instead, with
	// madvise(MADV_POPULATE_WRITE), which touches no byte of the file.
	written     atomic.Int64  // size, for the worker to read
	mapMu       sync.Mutex    // held by the worker while it populates, and while mem changes
	populated   int           // mem[:populated] is ready; guarded by mapMu
	populateErr error         // why the worker gave up, if it did; guarded by mapMu
	stop        chan struct{} // closed to end the worker; nil: no worker
	worker      conc.WaitGroup
}

// journalReserve is how much space the journal reserves at first; it
// doubles as it fills. populateAhead is how far ahead of the writer pages
// are made ready.
const (
	journalReserve = 256 << 10
	populateAhead  = 64 << 10
	populateStride = 16 << 10
	// The worker looks at the writer every populateTick while the journal
	// grows, less and less often, down to every populateIdle, while it
	// does not.
	populateTick = 250 * time.Microsecond
	populateIdle = 50 * time.Millisecond
)

var pageSize = os.Getpagesize()

// openJournalFile opens the journal for appending after its last whole line.
func openJournalFile(path string) (*journalFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// A journal left by an engine that died may end in a torn line or in
	// reserved zeros; facts go after its last whole line.
	if err := dropTornLine(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	j := &journalFile{f: f, size: int(st.Size())}
	if err := j.reserve(j.size + journalReserve); err != nil {
		j.mem = nil // write(2) it is
		return j, nil
	}
	j.written.Store(int64(j.size))
	j.stop = make(chan struct{})
	j.worker.Go(j.populate)
	return j, nil
}

// populate makes pages ready ahead of the writer until close. It looks at
// where the writer is on a timer rather than being woken by the writer: a
// goroutine woken from the writer's thread is queued on that thread's
// processor, and would run in place of the visits it is meant to spare.
func (j *journalFile) populate() {
	tick := time.NewTimer(populateTick)
	defer tick.Stop()
	wait := populateTick
	for {
		want := int(j.written.Load()) + populateAhead
		busy := false
		for j.populateStep(want) {
			busy = true
		}
		if j.populateErr != nil {
			return
		}
		if busy {
			wait = populateTick
		} else {
			wait = min(2*wait, populateIdle)
		}
		tick.Reset(wait)
		select {
		case <-j.stop:
			return
		case <-tick.C:
		}
	}
}

// populateStep makes up to populateStride more bytes ready, short of want,
// and says whether there is more to do.
func (j *journalFile) populateStep(want int) bool {
	j.mapMu.Lock()
	defer j.mapMu.Unlock()
	// Whole pages: madvise takes a page-aligned start.
	from := j.populated
	to := min(want+pageSize-1, len(j.mem), from+populateStride) &^ (pageSize - 1)
	if from >= to {
		return false
	}
	if err := populateWrite(j.mem[from:to]); err != nil {
		// An older kernel does not know the advice: the writer takes the
		// faults itself, as without a worker.
		j.populated, j.populateErr = len(j.mem), err
		return false
	}
	j.populated = to
	return true
}

// reserve makes the mapping hold at least n bytes.
func (j *journalFile) reserve(n int) error {
	grown := max(2*len(j.mem), journalReserve)
	for grown < n {
		grown *= 2
	}
	fd := int(j.f.Fd())
	if err := fallocate(fd, int64(grown)); err != nil {
		return fmt.Errorf("reserving journal space: %w", err)
	}
	mem, err := syscall.Mmap(fd, 0, grown, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the journal: %w", err) // close cuts the reserve off
	}
	j.mapMu.Lock()
	defer j.mapMu.Unlock()
	if j.mem != nil {
		_ = syscall.Munmap(j.mem)
	}
	j.mem = mem
	j.populated = j.size &^ (pageSize - 1) // the new mapping's pages are not ready, wherever they were before
	return nil
}

// append adds one encoded fact, which ends in a newline. When it returns,
// the fact is in the page cache.
func (j *journalFile) append(line []byte) error {
	if j.f == nil {
		return errors.New("writing journal: the run directory is closed")
	}
	if j.mem == nil {
		n, err := j.f.WriteAt(line, int64(j.size))
		j.size += n
		if err != nil {
			return fmt.Errorf("writing journal: %w", err)
		}
		return nil
	}
	end := j.size + len(line)
	if end > len(j.mem) {
		if err := j.reserve(end); err != nil {
			return err
		}
	}
	// The newline goes in last, by a store of its own: a reader that sees
	// it sees the whole line before it (string copies may store out of
	// order on some processors).
	copy(j.mem[j.size:end-1], line[:len(line)-1])
	j.mem[end-1] = line[len(line)-1]
	j.size = end
	j.written.Store(int64(end))
	return nil
}

// close cuts the reserved space off and closes the file, with its pages on
// their way to the disk: writeback starts now, not when the kernel's timer
// fires, but the run does not wait for it. What the journal promises is
// that the engine's death loses nothing; a machine that loses power can
// lose the last seconds of any file it had not written back, and waiting
// for the disk at the end of every run would cost a quick run more than
// all its facts together.
func (j *journalFile) close() error {
	if j.f == nil {
		return nil
	}
	if j.stop != nil {
		close(j.stop)
		j.worker.Wait()
		j.stop = nil
	}
	var errs []error
	if j.mem != nil {
		errs = append(errs, syscall.Munmap(j.mem))
		j.mem = nil
	}
	errs = append(errs, j.f.Truncate(int64(j.size)))
	if err := startWriteback(int(j.f.Fd())); err != nil {
		errs = append(errs, fmt.Errorf("writing the journal back: %w", err))
	}
	errs = append(errs, j.f.Close())
	j.f = nil
	return errors.Join(errs...)
}
