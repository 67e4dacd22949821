package engine

import (
	"errors"
	"fmt"
	"os"
	"syscall"
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
}

// journalReserve is how much space the journal reserves at first; it
// doubles as it fills.
const journalReserve = 1 << 20

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
	}
	return j, nil
}

// reserve makes the mapping hold at least n bytes.
func (j *journalFile) reserve(n int) error {
	grown := max(2*len(j.mem), journalReserve)
	for grown < n {
		grown *= 2
	}
	fd := int(j.f.Fd())
	if err := syscall.Fallocate(fd, 0, 0, int64(grown)); err != nil {
		return fmt.Errorf("reserving journal space: %w", err)
	}
	mem, err := syscall.Mmap(fd, 0, grown, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the journal: %w", err) // close cuts the reserve off
	}
	if j.mem != nil {
		_ = syscall.Munmap(j.mem)
	}
	j.mem = mem
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
	return nil
}

// close cuts the reserved space off, syncs and closes the file.
func (j *journalFile) close() error {
	if j.f == nil {
		return nil
	}
	var errs []error
	if j.mem != nil {
		errs = append(errs, syscall.Munmap(j.mem))
		j.mem = nil
	}
	errs = append(errs, j.f.Truncate(int64(j.size)), j.f.Sync(), j.f.Close())
	j.f = nil
	return errors.Join(errs...)
}
