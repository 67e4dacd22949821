package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// A lock left by a dead process is taken over, and only one of several
// racing resumers wins it.
func TestStaleLockTakeoverIsExclusive(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	stale, _ := json.Marshal(Lock{PID: 1 << 30, Host: host}) // no such pid
	if err := os.WriteFile(filepath.Join(dir, "lock.json"), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	var wins, locked atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			err := acquireLock(dir)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrLocked):
				locked.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || locked.Load() != 7 {
		t.Fatalf("%d resumers won the lock and %d were refused; want 1 and 7", wins.Load(), locked.Load())
	}
}

func TestLockOfAnotherHostIsNotTakenOver(t *testing.T) {
	dir := t.TempDir()
	other, _ := json.Marshal(Lock{PID: 1 << 30, Host: "elsewhere.example"})
	if err := os.WriteFile(filepath.Join(dir, "lock.json"), other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := acquireLock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lock of another host must be respected, got %v", err)
	}
}

// Facts written from many goroutines at once are each in the journal,
// whole and once, when fact returns.
func TestConcurrentFactsLoseNothing(t *testing.T) {
	st, err := openStore(t.TempDir(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				visit := fmt.Sprintf("w%d[%d]", w, i)
				ok := true
				row, err := st.begin(time.Now(), &flows.Node{ID: "w", Kind: schema.KindMap}, visit, false)
				if err != nil {
					t.Error(err)
				}
				if err := st.end(row, &Fact{Type: "end", Time: time.Now(), Visit: visit, OK: &ok, Output: visit}); err != nil {
					t.Error(err)
				}
				// What end returned for is in the journal now.
				if i == each-1 {
					facts, err := ReadJournal(st.dir)
					if err != nil {
						t.Error(err)
					}
					if !slices.ContainsFunc(facts, func(f Fact) bool { return f.Type == "end" && f.Visit == visit }) {
						t.Errorf("%s returned before its fact was written", visit)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	facts, err := ReadJournal(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range facts {
		seen[f.Type+" "+f.Visit]++
	}
	if len(facts) != 2*workers*each {
		t.Fatalf("%d facts in the journal, want %d", len(facts), 2*workers*each)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s written %d times", k, n)
		}
	}
}

// The journal grows past the address space it mapped, and what a dead
// engine left (facts, then zeros, then perhaps a torn line) is read to its
// last whole fact and continued by a resume.
func TestJournalOfADeadEngineIsContinued(t *testing.T) {
	mapped := journalMapping
	journalMapping = 64 << 10
	t.Cleanup(func() { journalMapping = mapped })
	dir := t.TempDir()
	st, err := openStore(dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 4000)
	n := 3 * journalMapping / 4000
	for i := range n {
		if _, err := st.begin(time.Now(), &flows.Node{ID: big, Kind: schema.KindMap}, fmt.Sprint("v", i), false); err != nil {
			t.Fatal(err)
		}
	}
	// The file as the engine's death would leave it: read while mapped.
	waitReadyAhead(t, st.journal)
	left, err := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if len(left) <= 3*journalMapping || left[len(left)-1] != 0 {
		t.Fatalf("a live journal of %d bytes should end in zeros", len(left))
	}
	dead := t.TempDir()
	torn := append(left, `{"type":"end","vis`...)
	if err := os.WriteFile(filepath.Join(dead, "journal.jsonl"), torn, 0o644); err != nil {
		t.Fatal(err)
	}
	facts, err := ReadJournal(dead)
	if err != nil || len(facts) != n {
		t.Fatalf("read %d facts of a dead engine's journal (%v), want %d", len(facts), err, n)
	}
	st, err = openStore(dead, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.fact(&Fact{Type: "run", Time: time.Now(), Status: "running", Resumed: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dead, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(b, 0) >= 0 || !bytes.HasSuffix(b, []byte("\"resumed\":true}\n")) {
		t.Fatalf("the resumed journal should be whole lines with the new fact last; it ends %q", b[max(0, len(b)-80):])
	}
	if facts, err = ReadJournal(dead); err != nil || len(facts) != n+1 {
		t.Fatalf("read %d facts after the resume (%v), want %d", len(facts), err, n+1)
	}
}

// The journal's pages are made ready ahead of the writer, so that a visit
// does not wait for the file system to fault them in.
func TestJournalPagesAreReadyAhead(t *testing.T) {
	st, err := openStore(t.TempDir(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	ok := true
	for i := range 2000 {
		visit := "n" + strconv.Itoa(i)
		row, err := st.begin(time.Now(), &flows.Node{ID: visit, Kind: schema.KindAgent}, visit, false)
		if err == nil {
			err = st.end(row, &Fact{Type: "end", Time: time.Now(), Visit: visit, Node: visit, OK: &ok, Output: "ok", Usage: &Usage{}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	j := st.journal
	waitReadyAhead(t, j)
	j.mapMu.Lock()
	defer j.mapMu.Unlock()
	// The worker makes whole pages ready: up to a page past its lead.
	if ready := int(j.ready.Load()); ready > j.size+populateAhead+pageSize {
		t.Fatalf("%d bytes of the journal are ready, %d written: the worker is too far ahead", ready, j.size)
	}
}

// waitReadyAhead waits until the worker has made bytes ready past the
// writer.
func waitReadyAhead(t *testing.T, j *journalFile) {
	t.Helper()
	probe, err := syscall.Mmap(-1, 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := populateWrite(probe); err != nil {
		t.Skipf("this kernel cannot populate ahead: %v", err)
	}
	_ = syscall.Munmap(probe)
	deadline := time.Now().Add(5 * time.Second)
	for {
		switch ready := int(j.ready.Load()); {
		case ready > j.size:
			return
		case time.Now().After(deadline):
			t.Fatalf("%d bytes of the journal are ready, %d written: the worker is not ahead", ready, j.size)
		}
		time.Sleep(time.Millisecond)
	}
}

// A leaf that ends before the next flush has only its end fact; one still
// running at a flush has its start journaled then; a block's start is
// journaled at once. JournalVisits rebuilds every visit, in order.
func TestQuickLeavesHaveOnlyAnEndFact(t *testing.T) {
	st, err := openStore(t.TempDir(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	begin := func(visit, kind string, leaf bool) int {
		row, err := st.begin(at, &flows.Node{ID: visit, Kind: schema.Kind(kind)}, visit, leaf)
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	end := func(row int, visit, kind string, wall int64) {
		if err := st.end(row, &Fact{Type: "end", Time: at.Add(time.Duration(wall) * time.Millisecond), Visit: visit, Node: visit, Kind: kind, OK: boolRef(true), WallMS: wall}); err != nil {
			t.Fatal(err)
		}
	}
	fan := begin("fan", "map", false)
	quick := begin("fan[1]/q", "agent", true)
	end(quick, "fan[1]/q", "agent", 3)
	long := begin("fan[2]/l", "run", true)
	if err := st.flushStarts(); err != nil {
		t.Fatal(err)
	}
	if err := st.flushStarts(); err != nil { // nothing new: nothing written twice
		t.Fatal(err)
	}
	end(long, "fan[2]/l", "run", 400)
	end(fan, "fan", "map", 401)
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	facts, err := ReadJournal(st.dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range facts {
		lines = append(lines, f.Type+" "+f.Visit)
	}
	want := []string{"start fan", "end fan[1]/q", "start fan[2]/l", "end fan[2]/l", "end fan"}
	if !slices.Equal(lines, want) {
		t.Fatalf("journal:\n%v\nwant\n%v", lines, want)
	}
	var got []string
	for _, v := range JournalVisits(facts) {
		got = append(got, fmt.Sprintf("%s %s %s ended=%v", v.Start.Visit, v.Start.Kind, v.Start.Time.Format("05.000"), v.End != nil))
	}
	wantVisits := []string{"fan map 00.000 ended=true", "fan[1]/q agent 00.000 ended=true", "fan[2]/l run 00.000 ended=true"}
	if !slices.Equal(got, wantVisits) {
		t.Fatalf("visits:\n%v\nwant\n%v", got, wantVisits)
	}
}

// A fact that finds no ready bytes (the worker is behind, or gone) is
// written after the writer made them ready itself, and the facts before
// and after it make one journal, in order.
func TestJournalWriterCatchesUp(t *testing.T) {
	j, path := openMappedJournal(t)
	var want bytes.Buffer
	for i := range 3000 {
		if i == 1000 { // the rest goes past the bytes the worker made ready
			j.stopWorker()
		}
		line := fmt.Sprintf("{\"type\":\"end\",\"visit\":\"n%d\"}\n", i)
		want.WriteString(line)
		if err := j.append([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	closeAndCompare(t, j, path, want.Bytes())
}

// Pages let go behind the writer keep what was written on them: the
// journal read back holds every fact, those before the pages were let go
// and those after.
func TestJournalPagesLetGoKeepTheirFacts(t *testing.T) {
	j, path := openMappedJournal(t)
	j.stopWorker() // let go here, not when the worker is nudged
	var want bytes.Buffer
	add := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			line := fmt.Sprintf("{\"type\":\"end\",\"visit\":\"n%d\",\"output\":%q}\n", i, strings.Repeat("x", 200))
			want.WriteString(line)
			if err := j.append([]byte(line)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 4*letGoStride/220)
	j.letGo()
	if j.kept < 2*letGoStride {
		t.Fatalf("%d bytes written, pages let go up to %d: want more than %d", j.size, j.kept, 2*letGoStride)
	}
	add(4*letGoStride/220, 5*letGoStride/220)
	closeAndCompare(t, j, path, want.Bytes())
}

// A fact is encoded straight into the mapping where there is room; one
// that turns out longer than the room is written whole after all, and the
// journal holds every fact once, in order.
func TestJournalFactLongerThanItsRoom(t *testing.T) {
	j, path := openMappedJournal(t)
	j.stopWorker() // the room is only what the writer makes ready
	var want bytes.Buffer
	at := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	add := func(f *Fact) {
		t.Helper()
		line, err := appendFact(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		want.Write(line)
		if err := j.appendFact(f); err != nil {
			t.Fatal(err)
		}
	}
	room := func() int { return int(j.ready.Load()) - j.size }
	for i := 0; i == 0 || room() < directRoom || room() >= 2*directRoom; i++ {
		add(&Fact{Type: "end", Time: at, Visit: fmt.Sprint("n", i), OK: boolRef(true), Output: "ok"})
	}
	add(&Fact{Type: "end", Time: at, Visit: "big", OK: boolRef(true), Output: strings.Repeat("y", 3*directRoom)})
	add(&Fact{Type: "end", Time: at, Visit: "after", OK: boolRef(true)})
	closeAndCompare(t, j, path, want.Bytes())
}

// openMappedJournal opens a new journal, or skips the test where journals
// are not mapped.
func openMappedJournal(t *testing.T) (*journalFile, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := openJournalFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if j.mem == nil {
		_ = j.close()
		t.Skip("the journal is not mapped here")
	}
	return j, path
}

// closeAndCompare closes the journal and checks that its file holds want.
func closeAndCompare(t *testing.T, j *journalFile, path string, want []byte) {
	t.Helper()
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the journal holds %d bytes (%v), want the %d written", len(got), err, len(want))
	}
}

// Where pages cannot be made ready ahead, facts are written with
// write(2), one after another, and the file ends with the last fact.
func TestJournalWithoutAMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	j := &journalFile{f: f}
	for _, line := range []string{"{\"type\":\"run\"}\n", "{\"type\":\"end\",\"visit\":\"a\"}\n"} {
		if err := j.append([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\"type\":\"run\"}\n{\"type\":\"end\",\"visit\":\"a\"}\n" {
		t.Fatalf("journal = %q, %v", b, err)
	}
	if err := j.append([]byte("{}\n")); err == nil {
		t.Fatal("a closed journal took a fact")
	}
}

// The journal writer's per-fact fields fill the first cache line of a
// journalFile, and journalFiles start on a cache line: 192 bytes is a size
// class whose objects lie at multiples of 192 from a page.
func TestJournalFileLayout(t *testing.T) {
	var j journalFile
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the padding is measured for 64-bit platforms")
	}
	if size := unsafe.Sizeof(j); size != 192 {
		t.Errorf("journalFile is %d bytes, want 192: change its padding", size)
	}
	if off := unsafe.Offsetof(j.alone) + unsafe.Sizeof(j.alone); off > cacheLine {
		t.Errorf("the writer's fields end at byte %d, past the first cache line", off)
	}
	for range 8 {
		heapJournalFile = &journalFile{} // on the heap, as openJournalFile's
		if p := uintptr(unsafe.Pointer(heapJournalFile)); p%cacheLine != 0 {
			t.Fatalf("a journalFile at %#x does not start on a cache line", p)
		}
	}
}

var heapJournalFile *journalFile
