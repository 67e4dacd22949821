package engine

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/sourcegraph/conc"
)

// journalFile is journal.jsonl as the engine writes it. Facts are copied
// into a shared memory mapping of the file: the bytes land in the kernel's
// page cache exactly as write(2) would put them there — they survive the
// engine's death, and other processes reading the file see them at once —
// but without a system call per fact, which was most of what journaling a
// quick visit cost.
//
// The file is kept longer than its facts, by zeros: readers stop at the
// first NUL byte (see ReadJournal), and a resume cuts the file back to its
// last whole line. Facts are copied only into bytes that are ready: the
// file was grown over them by write(2), which is where the file system
// claims their space, and their pages were faulted in for writing by
// madvise(MADV_POPULATE_WRITE). A full disk is therefore an error, never a
// fault when a fact is copied. Where pages cannot be made ready that way
// (an old kernel, another system), facts are written with write(2).
type journalFile struct {
	// The writer's fields, which it reads or writes at every fact, fill
	// the first cache line, and the struct is padded to a size class whose
	// objects start on one (TestJournalFileLayout). In a map the writer
	// moves from one processor to the other as visits take turns at the
	// journal, and one line moves with it rather than two: the map's
	// journal cost fell by 0.2-1.5 points (three sets of 10-16 interleaved
	// invocations; 8.75 -> 8.09% over 30 of each).
	f      *os.File
	mem    []byte        // the mapping, from offset 0, longer than the file; nil when writing with write(2)
	size   int           // the bytes of facts
	nudge  chan struct{} // the writer's call for more room; holds one at most
	nudged int           // the ready mark the writer last nudged at; only the writer uses it
	alone  int           // facts written since a visit last waited for the journal; only the writer uses it

	// A worker beside the writer grows the file and makes its pages ready
	// ahead of the writer, and unmaps the pages behind it. Each costs the
	// kernel about a microsecond a page, which the visits do not wait for,
	// unless the writer catches up with the worker.
	ready   atomic.Int64  // mem[:ready] may be written
	written atomic.Int64  // size, for the worker to read, as of the writer's last new page
	mapMu   sync.Mutex    // held while the file grows, pages are made ready or let go, and mem changes
	length  int           // the file's length; guarded by mapMu
	kept    int           // the pages before mem[kept] have been let go; guarded by mapMu
	stop    chan struct{} // closed to end the worker; nil: no worker
	worker  conc.WaitGroup
	_       [56]byte // to 192 bytes, a size class whose objects start on a cache line
}

// The journal maps journalMapping bytes of address space at first, which
// costs nothing until pages are used, and more when a journal outgrows
// it. Pages are made ready populateStride at a time (the kernel makes
// bigger writes into bigger folios: 64 KiB at a time costs 1 µs a page,
// 16 KiB 1.8 µs), populateAhead ahead of the writer, and let go
// letGoStride at a time. A writer that catches up makes only catchUpAhead
// ready past its fact: it is waiting. The lead is fixed: the worker comes
// when nudged, so a lead that grew with the writer's pace or each time it
// caught up only left more zeros to cut off at the end (170-200 KiB a
// 1,000-visit run, 90-115 KiB fixed), with as many catch-ups.
// Growing the file as it is needed, rather than reserving its blocks,
// keeps the end of a run short: a 1,000-visit run spent a third of its
// journal's cost cutting reserved blocks off, unmapping and starting the
// writeback. Letting pages go keeps a long run's mapping small, but each
// time costs a TLB shootdown: the kernel interrupts the other processors
// running the engine, visits included (perf: 40 µs of the worker's time
// per 1,000-visit run at 64 KiB). At 1 MiB a 1,000-visit run lets go of
// nothing, and its journal cost 0.7-0.8 points less in the chain and the
// loop; unmapping its few hundred KiB at close costs a few µs more.
var journalMapping = 256 << 20

const (
	populateAhead  = 128 << 10
	populateStride = 64 << 10
	catchUpAhead   = 16 << 10
	letGoStride    = 1 << 20
)

var pageSize = os.Getpagesize()

// zeros is what the file grows by.
var zeros [populateStride]byte

// openJournalFile opens the journal for appending after its last whole line.
func openJournalFile(path string) (*journalFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// A journal left by an engine that died may end in a torn line or in
	// zeros; facts go after its last whole line.
	if err := dropTornLine(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	size := int(st.Size())
	j := &journalFile{f: f, size: size, length: size, kept: size &^ (pageSize - 1)}
	j.ready.Store(int64(j.kept)) // the page facts go on next is not faulted in
	j.written.Store(int64(size))
	mem, err := syscall.Mmap(int(f.Fd()), 0, max(journalMapping, 2*size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return j, nil // write(2) it is
	}
	if err := populateWrite(mem[:0]); err != nil {
		_ = syscall.Munmap(mem)
		return j, nil // the kernel cannot make pages ready: write(2)
	}
	j.mem = mem
	// The run's first facts come before the worker's first round has
	// made room: two pages are made ready here, so that they do not wait
	// for that round under mapMu (two of three runs of the loop waited,
	// 33 µs each).
	if _, err := j.readyStep(size + firstRoom); err != nil {
		_ = syscall.Munmap(mem)
		_ = f.Close()
		return nil, err
	}
	j.stop, j.nudge = make(chan struct{}), make(chan struct{}, 1)
	j.worker.Go(j.work)
	return j, nil
}

// work makes pages ready ahead of the writer and lets them go behind it,
// until close: once at the start, then each time the writer nudges it,
// when less than nudgeRoom is left (see wrote). It sleeps in between, for
// the whole of a slow agent turn. It is not on a timer: Go's timers sleep
// in whole milliseconds, later still while the collector runs, and a
// worker on one slept through the first 128 KiB of quick visits in most
// 1,000-visit runs, while the writer made room itself, 16 KiB and 16 µs
// at a time. A nudge is one non-blocking send per 64 KiB or so of facts.
// If making pages ready fails, the worker stops, and the writer meets the
// error itself when it gets there.
func (j *journalFile) work() {
	for {
		written := int(j.written.Load())
		for {
			more, err := j.readyStep(written + populateAhead)
			if err != nil {
				return
			}
			if !more {
				break
			}
		}
		j.letGo()
		select {
		case <-j.stop:
			return
		case <-j.nudge:
		}
	}
}

// readyStep makes up to populateStride more bytes ready, short of want,
// and says whether it made any.
func (j *journalFile) readyStep(want int) (bool, error) {
	j.mapMu.Lock()
	defer j.mapMu.Unlock()
	return j.makeReady(want)
}

// makeReady makes up to populateStride more bytes ready, short of want
// rounded up to a whole page and of the end of the mapping, and says
// whether it made any; mapMu is held.
func (j *journalFile) makeReady(want int) (bool, error) {
	from := max(int(j.ready.Load()), int(j.written.Load())&^(pageSize-1))
	to := min((want+pageSize-1)&^(pageSize-1), from+populateStride, len(j.mem))
	if from >= to {
		return false, nil
	}
	// The file grows by zeros written after its end: faulting in a page
	// of a hole instead reads it, which costs twice as much. The file
	// system claims the space here, and a full disk is an error here.
	if grow := max(from, j.length); grow < to {
		if _, err := j.f.WriteAt(zeros[:to-grow], int64(grow)); err != nil {
			return false, fmt.Errorf("growing the journal: %w", err)
		}
		j.length = to
	}
	if err := populateWrite(j.mem[from:to]); err != nil {
		return false, fmt.Errorf("making journal space ready: %w", err)
	}
	j.ready.Store(int64(to))
	return true, nil
}

// letGo unmaps the pages wholly behind the writer, which it never writes
// again, so that close has little left to unmap. They stay in the page
// cache.
func (j *journalFile) letGo() {
	j.mapMu.Lock()
	defer j.mapMu.Unlock()
	behind := int(j.written.Load()) &^ (pageSize - 1)
	if behind-j.kept < letGoStride {
		return
	}
	_ = dropPages(j.mem[j.kept:behind])
	j.kept = behind
}

// directRoom is how many ready bytes a fact needs to find to be encoded
// straight into the mapping.
const directRoom = 1 << 10

// appendFact encodes f and appends it. Where there is room, it is encoded
// straight into the mapping, with no buffer to take and copy from: a quick
// visit's end fact, the journal's most common line. The encoder stores the
// line front to back, its newline last. A fact that outgrows the room is
// appended from where the encoder moved it, over the start it left.
func (j *journalFile) appendFact(f *Fact) error {
	if j.f != nil && j.mem != nil {
		if ready := int(j.ready.Load()); ready-j.size >= directRoom {
			if canPrefetchForWriting && j.alone <= prefetchAlone {
				prefetchForWriting(&j.mem[j.size&^(cacheLine-1)], prefetchAhead)
			}
			room := j.mem[j.size:j.size:ready]
			line, err := appendFact(room, f)
			if err != nil {
				return fmt.Errorf("encoding journal fact: %w", err)
			}
			if unsafe.SliceData(line) != unsafe.SliceData(room) {
				return j.append(line)
			}
			j.wrote(j.size+len(line), ready)
			return nil
		}
	}
	line := lineBuffers.Get().(*[]byte)
	defer release(line)
	var err error
	if *line, err = appendFact((*line)[:0], f); err != nil {
		return fmt.Errorf("encoding journal fact: %w", err)
	}
	return j.append(*line)
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
	ready := int(j.ready.Load())
	if end > ready {
		if err := j.catchUp(end); err != nil {
			return fmt.Errorf("writing journal: %w", err)
		}
		ready = int(j.ready.Load())
	}
	// The newline goes in last, by a store of its own: a reader that sees
	// it sees the whole line before it (string copies may store out of
	// order on some processors).
	copy(j.mem[j.size:end-1], line[:len(line)-1])
	j.mem[end-1] = line[len(line)-1]
	j.wrote(end, ready)
	return nil
}

// The lines of the mapping the next fact goes into were last written by
// the worker, as it grew the file by zeros, and are held in its
// processor's cache: a store of the writer's into one waits for the line
// to move, at the next fence (a mutex, soon after the fact). So a fact
// asks for the lines of the next, prefetchAhead bytes after its end (a
// quick visit's end fact is about 300 bytes), which then move while the
// next visit runs: the journal's cost fell by about a point in the chain
// and the loop (two sets of 14 and 20 interleaved invocations). Where
// visits run side by side and wait for each other's facts, as in a map,
// the next fact is as likely written on the other processor, which then
// takes the lines from this one: there the cost rose by half a point to a
// point. So a fact asks only after prefetchAlone facts in a row were
// written without a visit waiting. Until then, a fact encoded straight
// into the mapping asks for its own lines first: they move while it is
// encoded, rather than one by one as its stores reach them (the map's
// journal cost 0.6-0.7 points less, in two sets of 14 and 16 interleaved
// invocations).
const (
	cacheLine     = 64
	prefetchAhead = 6 * cacheLine
	prefetchAlone = 32
)

// shared notes that a visit waited for the journal: another writes facts
// beside it.
func (j *journalFile) shared() { j.alone = 0 }

// nudgeRoom is how little room left makes the writer nudge the worker;
// firstRoom is the room made ready when the journal opens.
const (
	nudgeRoom = populateAhead / 2
	firstRoom = 8 << 10
)

// wrote moves the end of the facts to end; ready is the ready mark the
// fact was written under. It tells the worker where the writer is only
// when the writer has moved to another page: the worker looks only at
// pages, and an atomic store is a fence (XCHG on amd64) that waits for
// the fact's stores into cold lines of the mapping. Once a page rather
// than once a fact took 20 ns off a visit (perf, 600 runs of the chain).
// When less than nudgeRoom is left, it nudges the worker, once per ready
// mark. Unless visits write side by side, it asks for the lines the next
// fact goes into (see prefetchAhead).
func (j *journalFile) wrote(end, ready int) {
	newPage := (j.size^end)&^(pageSize-1) != 0
	nudge := ready-end < nudgeRoom && ready != j.nudged && j.nudge != nil
	j.size = end
	j.alone++
	if canPrefetchForWriting && j.alone > prefetchAlone {
		if next := (end + cacheLine - 1) &^ (cacheLine - 1); next+prefetchAhead <= ready {
			prefetchForWriting(&j.mem[next], prefetchAhead)
		}
	}
	if newPage || nudge {
		j.written.Store(int64(end))
	}
	if nudge {
		j.nudged = ready
		select {
		case j.nudge <- struct{}{}:
		default:
		}
	}
}

// catchUp makes the bytes up to end ready, and catchUpAhead more, in the
// writer's place: the worker is behind, or gone. A worker nudged and not
// come since has no processor to run on (every one runs visits, as in a
// map): then the writer makes a whole stride ready, as the worker would
// have, at half the cost per page of smaller steps.
func (j *journalFile) catchUp(end int) error {
	j.mapMu.Lock()
	defer j.mapMu.Unlock()
	ahead := catchUpAhead
	if j.nudged >= int(j.ready.Load()) {
		ahead = populateStride
	}
	if want := end + ahead; want > len(j.mem) {
		if err := j.remap(want); err != nil {
			return err
		}
	}
	for int(j.ready.Load()) < end {
		if _, err := j.makeReady(end + ahead); err != nil {
			return err
		}
	}
	return nil
}

// remap maps at least n bytes of address space, twice as much as before;
// mapMu is held, and the caller is the writer, the one goroutine that
// reads mem without it.
func (j *journalFile) remap(n int) error {
	grown := 2 * len(j.mem)
	for grown < n {
		grown *= 2
	}
	mem, err := syscall.Mmap(int(j.f.Fd()), 0, grown, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the journal: %w", err)
	}
	_ = syscall.Munmap(j.mem)
	j.mem = mem
	j.kept = j.size &^ (pageSize - 1)
	j.ready.Store(int64(j.kept)) // the new mapping's pages are not faulted in
	return nil
}

// stopWorker ends the worker, if there is one, and waits for it.
func (j *journalFile) stopWorker() {
	if j.stop != nil {
		close(j.stop)
		j.worker.Wait()
		j.stop = nil
	}
}

// close cuts the zeros off and closes the file. It does not wait for the
// disk, nor start writing to it: the kernel writes the journal back as it
// does any file, within seconds (see docs/decisions.md on durability).
func (j *journalFile) close() error {
	if j.f == nil {
		return nil
	}
	j.stopWorker()
	var errs []error
	if j.mem != nil {
		errs = append(errs, syscall.Munmap(j.mem))
		j.mem = nil
	}
	errs = append(errs, j.f.Truncate(int64(j.size)))
	errs = append(errs, j.f.Close())
	j.f = nil
	return errors.Join(errs...)
}
