package rundir

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// The hostile-input cases of the run directory (issue 15): each test says
// which hole it closes.

// A reused pid: the lock names a live process, but not one that holds it
// (no flock on the file: the process that wrote it died and its pid went
// to another), so the lock is stale and a resume takes it over instead of
// waiting forever.
func TestHostileLockOfAReusedPidIsStale(t *testing.T) {
	me := thisProcess()
	for name, l := range map[string]Lock{
		"a live pid":   {PID: me.PID, Host: me.Host},
		"the init pid": {PID: 1, Host: me.Host},
	} {
		dir := t.TempDir()
		writeLock(t, dir, l)
		if err := acquireLock(dir); err != nil {
			t.Errorf("%s: the lock of a reused pid must be taken over, got %v", name, err)
		}
		_ = releaseLock(dir)
	}
}

// Every lock message names the pid and the lock's path.
func TestHostileLockMessagesNamePidAndPath(t *testing.T) {
	me := thisProcess()
	for name, l := range map[string]Lock{
		"held by a live process": me,
		"held on another host":   {PID: 4242, Host: "elsewhere.example"},
	} {
		dir := t.TempDir()
		if l == me {
			// Held for real: this process's flock on the file.
			if err := acquireLock(dir); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = releaseLock(dir) }()
		} else {
			writeLock(t, dir, l)
		}
		err := acquireLock(dir)
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("%s: %v, want ErrLocked", name, err)
		}
		path := filepath.Join(dir, lockFile)
		if msg := err.Error(); !strings.Contains(msg, "pid "+strconv.Itoa(l.PID)) || !strings.Contains(msg, path) {
			t.Errorf("%s: %q names not both the pid %d and %s", name, msg, l.PID, path)
		}
	}
}

func writeLock(t *testing.T, dir string, l Lock) {
	t.Helper()
	b, _ := json.Marshal(l)
	if err := os.WriteFile(filepath.Join(dir, lockFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A visit path from the command line cannot lead outside the run
// directory: only visits the journal names are looked up.
func TestHostileTranscriptOfAPathOutsideTheRun(t *testing.T) {
	runs := t.TempDir()
	w, err := Create(runs, "r")
	if err != nil {
		t.Fatal(err)
	}
	ok := true
	for _, f := range []*record.Fact{
		{Type: record.FactRun, Time: time.Now(), Status: record.StatusRunning},
		{Type: record.FactStart, Time: time.Now(), Visit: "a", Kind: schema.KindAgent},
		{Type: record.FactEnd, Time: time.Now(), Visit: "a", Kind: schema.KindAgent, OK: &ok},
	} {
		if err := w.Fact(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A log outside the run directory that ../../../x would reach.
	outside := filepath.Join(runs, "x")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.log"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, visit := range []string{"../../../x", "../../x", "/etc", "a/../../../x"} {
		path, err := Transcript(w.Dir(), visit)
		if err == nil || !strings.Contains(err.Error(), "has no visit") {
			t.Errorf("Transcript(%q) = %q, %v; want refused: the journal names no such visit", visit, path, err)
		}
	}
}

// A corrupt journal names its file and line, and the run stays in the
// list as corrupt instead of vanishing from it.
func TestHostileCorruptJournalIsListed(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "20260101-120000-abcdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	journal := `{"type":"run","status":"running","time":"2026-01-01T12:00:00Z","flow":"f"}` + "\n" + "garbage\n" + `{"type":"start","visit":"a"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, journalFile), []byte(journal), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Inspect(dir)
	if ce := (*CorruptError)(nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(dir, journalFile)+":2:") {
		t.Fatalf("Inspect = %v, want a CorruptError naming %s:2", err, journalFile)
	}
	runsList, err := List(runs)
	if err != nil || len(runsList) != 1 {
		t.Fatalf("List = %v, %v; want the corrupt run", runsList, err)
	}
	r := runsList[0]
	if r.Status != record.StatusCorrupt || r.Resumable || !strings.Contains(r.Why, journalFile+":2:") || r.Started.IsZero() {
		t.Errorf("listed as %+v, want corrupt, not resumable, with the line, and its start from the id", r)
	}
}

const testKey = "sk-hostile-0123456789"

// Secrets are redacted on the way in, whatever path writes them: facts,
// events, the output, the snapshot, the report, and files an agent CLI
// wrote into a home itself.
func TestHostileSecretsAreRedactedOnTheWayIn(t *testing.T) {
	t.Setenv("FLOW_TEST_SERVICE_TOKEN", "tok-from-the-environment")
	w, err := Create(t.TempDir(), "r", testKey)
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	start := time.Now()
	fail := &record.Failure{Kind: schema.FailProvider, Message: "the server said: bad key " + testKey, Visit: "a"}
	if err := w.WriteSnapshot(&Snapshot{Run: "r", Input: map[string]any{"k": testKey}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Fact(&record.Fact{Type: record.FactRun, Time: start, Status: record.StatusRunning, Input: testKey}); err != nil {
		t.Fatal(err)
	}
	end := &record.Fact{Type: record.FactEnd, Time: time.Now(), Visit: "a", Kind: schema.KindAgent, OK: &ok, Error: fail, Output: "tok-from-the-environment"}
	if err := w.Fact(end); err != nil {
		t.Fatal(err)
	}
	if end.Error.Message != "the server said: bad key [redacted]" {
		t.Errorf("the fact kept for the report: %q", end.Error.Message)
	}
	ev := &record.Event{Type: record.EventProgress, Visit: "a", Activity: "echoing " + testKey}
	if err := w.Event(ev); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ev.Activity, testKey) {
		t.Errorf("the event handed on is not redacted: %q", ev.Activity)
	}
	home := w.Home("a")
	if err := os.MkdirAll(filepath.Join(home, "cli-config"), 0o700); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(home, "cli-config", "session.jsonl")
	if err := os.WriteFile(session, []byte(`{"answer":"`+strings.Repeat("x", 100<<10)+testKey+`"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := w.RedactHome("a", start); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(session); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the redacted file lost its mode: %v %v", st, err)
	}
	if err := w.Finish(map[string]any{"answer": "x " + testKey}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, w.Dir(), testKey, "tok-from-the-environment")
}

// assertNoSecret walks dir and fails for every file that holds one of
// secrets.
func assertNoSecret(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q", p, s)
			}
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walking %s: %v (%d files)", dir, err, files)
	}
}

// Paths a journal names are the run's only inside its worktrees directory,
// links followed (issue 23).
func TestHostileWorktreeInside(t *testing.T) {
	run := t.TempDir()
	far := t.TempDir()
	if err := os.MkdirAll(filepath.Join(run, "worktrees", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(far, filepath.Join(run, "worktrees", "out")); err != nil {
		t.Fatal(err)
	}
	linked := t.TempDir()
	if err := os.Symlink(far, filepath.Join(linked, "worktrees")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(run, "worktrees", "a"):                 true,
		filepath.Join(run, "worktrees", "not-yet", "deeper"): true,
		filepath.Join(run, "worktrees"):                      false,
		run:                                                  false,
		far:                                                  false,
		filepath.Join(run, "worktrees", "..", ".."): false,
		filepath.Join(run, "worktrees", "out"):      false,
		filepath.Join(run, "worktrees", "out", "x"): false,
		"/":                                     false,
		filepath.Join(linked, "worktrees", "a"): false,
	} {
		dir := run
		if strings.HasPrefix(path, linked) {
			dir = linked
		}
		if got := WorktreeInside(dir, path); got != want {
			t.Errorf("WorktreeInside(%s, %s) = %v, want %v", dir, path, got, want)
		}
	}
}

// The run's files are never written through a link, and a FIFO where one
// should be is an error, not a hang.
func TestHostileRunFilesAreNotFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "events.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := openLineFile(link, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("openLineFile through a link: %v", err)
	}
	if err := dropTornLine(link); err == nil {
		t.Fatal("dropTornLine through a link must fail")
	}
	fifo := filepath.Join(dir, "journal.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJournal(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadJournal of a FIFO: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Fatalf("the target was written: %q", b)
	}
}

// A resume drops the journal's worktree paths outside the run and refuses
// to make one under a worktrees/ that leads elsewhere (issue 23).
func TestHostileConfineAndReadyWorktree(t *testing.T) {
	runs := t.TempDir()
	w, err := Create(runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	far := t.TempDir()
	ws := []*record.Worktree{{Scope: "in", Path: w.Worktree("in")}, {Scope: "out", Path: far}}
	notes := w.Confine(ws)
	if len(notes) != 1 || !strings.Contains(notes[0], far) || ws[0].Path == "" || ws[1].Path != "" {
		t.Fatalf("Confine: %q, paths %q %q", notes, ws[0].Path, ws[1].Path)
	}
	if err := w.ReadyWorktree(w.Worktree("in")); err != nil {
		t.Fatalf("ReadyWorktree inside: %v", err)
	}
	if err := os.Symlink(far, filepath.Join(w.Dir(), "worktrees")); err != nil {
		t.Fatal(err)
	}
	if err := w.ReadyWorktree(w.Worktree("in")); err == nil || !strings.Contains(err.Error(), "not inside") {
		t.Fatalf("ReadyWorktree under a linked worktrees/: %v", err)
	}
}

// A FIFO where lock.json, snapshot.json or values.json should be is an
// error at once, never a read that waits (issue 23).
func TestHostileFIFOsInARunAreNotWaitedOn(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{lockFile, snapshotFile, valuesFile} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := ReadLock(filepath.Join(dir, lockFile)); err == nil {
			t.Error("ReadLock of a FIFO must fail")
		}
		if _, err := ReadSnapshot(dir); err == nil {
			t.Error("ReadSnapshot of a FIFO must fail")
		}
		if _, err := ReadValues(dir); err == nil {
			t.Error("ReadValues of a FIFO must fail")
		}
		if err := acquireLock(dir); err == nil {
			t.Error("a FIFO lock must not be taken")
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading a run's FIFO waits")
	}
}

// A resume refuses a run whose home/ or worktrees/ is a link: the
// drivers would write transcripts through it (issue 23).
func TestHostileReopenRefusesLinkedDirs(t *testing.T) {
	for _, sub := range []string{homesDir, worktreesDir} {
		runs := t.TempDir()
		w, err := Create(runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Fact(&record.Fact{Type: record.FactRun, Time: time.Now(), RunID: "r1", Status: record.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
		if err := os.Symlink(t.TempDir(), filepath.Join(runs, "r1", sub)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Reopen(filepath.Join(runs, "r1")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s linked: Reopen gave %v", sub, err)
		}
	}
}

// A resume refuses a run with a link under home/ that leads out of the
// run directory — a visit's home, or a transcript or live log in it, or a
// dangling link O_CREAT would follow — and leaves the file it points at
// alone; a link inside a home to a file of the run is left be.
func TestHostileReopenRefusesLinksOutOfTheHomes(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "w.log")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ link, target string }{
		"a visit's home":     {"home/t2", outside},
		"a nested home":      {"home/fan#1/each", outside},
		"a live log":         {"home/t2/w.log", victim},
		"a dangling link":    {"home/t2/w.jsonl", filepath.Join(outside, "new.jsonl")},
		"a link to the root": {"home/t2/up", "/"},
	} {
		runs := t.TempDir()
		w, err := Create(runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Fact(&record.Fact{Type: record.FactRun, Time: time.Now(), RunID: "r1", Status: record.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
		link := filepath.Join(runs, "r1", filepath.FromSlash(c.link))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(c.target, link); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Reopen(filepath.Join(runs, "r1")); err == nil || !strings.Contains(err.Error(), "leads out of the run directory") {
			t.Errorf("%s linked out: Reopen gave %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(runs, "r1", "lock.json")); !os.IsNotExist(err) {
			t.Errorf("%s: the refusal left the lock behind: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("the file outside was touched: %q", b)
	}

	runs := t.TempDir()
	w, err := Create(runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Fact(&record.Fact{Type: record.FactRun, Time: time.Now(), RunID: "r1", Status: record.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	home := filepath.Join(runs, "r1", "home", "t1")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "session.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("session.jsonl", filepath.Join(home, "latest")); err != nil {
		t.Fatal(err)
	}
	w, _, err = Reopen(filepath.Join(runs, "r1"))
	if err != nil {
		t.Fatalf("a link inside a home to a file of the run: Reopen gave %v", err)
	}
	_ = w.Close()
}
