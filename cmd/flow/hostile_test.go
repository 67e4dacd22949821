package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowrun/flow/internal/modelserver"
)

// The hostile-input cases that need the real flow binary and a Go test
// (issue 15); the command-line ones are testdata/script/hostile-*.txtar.

// hostileKey is a key whose variable's name does not say it is one
// (MY_LLM_ACCESS): only the configuration and the agents name it, and the
// redactor still knows it.
const hostileKey = "sk-hostile-echoed-0123456789"

// keyOf returns the key a request carried.
func keyOf(r modelserver.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// TestHostileSecretsAreWrittenNowhere: a model server that echoes the key
// in an error and in an answer, an exec agent and a command that print it
// on stdout and stderr, and a failing agent whose last stderr line holds
// it: the key appears in no file of the run directory (journal, events,
// output.json, report.html, usage, snapshot, transcripts, history,
// session files, answer files, logs), nor on the stdout or stderr of
// flow run, flow show, flow tail and flow runs --json — for every driver.
func TestHostileSecretsAreWrittenNowhere(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		s := modelserver.Start(t)
		s.Handle(func(r modelserver.Request) modelserver.Reply {
			if bytes.Contains(r.Body, []byte("please fail")) {
				return modelserver.Reply{Status: 401, Message: "invalid key " + keyOf(r)}
			}
			return modelserver.Reply{Text: "your key is " + keyOf(r)}
		})
		env, frontmatter := dc.setup(t, s.URL())
		for i := range env {
			env[i] = strings.ReplaceAll(env[i], "FLOW_TEST_MODEL_KEY", "MY_LLM_ACCESS")
		}
		frontmatter = strings.ReplaceAll(frontmatter, "FLOW_TEST_MODEL_KEY", "MY_LLM_ACCESS")
		env = append(env, "MY_LLM_ACCESS="+hostileKey, cleanHome(t))
		helper := "---\nname: helper\ndescription: Echoes\ndriver: " + dc.name + "\nmodel: test-model\n" + frontmatter + "---\nYou help.\n"
		flow := `name: f
agents:
  - ./agents
  - {name: printer, description: prints the key, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "printed $MY_LLM_ACCESS"; echo "err $MY_LLM_ACCESS" >&2']}
  - {name: failer, description: fails with the key, driver: exec, command: [sh, -c, 'cat >/dev/null; echo "denied for $MY_LLM_ACCESS" >&2; exit 3']}
nodes:
  - {id: fail, agent: helper, prompt: please fail, on_fail: continue}
  - {id: print, agent: printer, prompt: x}
  - {id: denied, agent: failer, prompt: x, on_fail: continue}
  - {id: shell, run: 'echo "shell $MY_LLM_ACCESS"; echo "shell err $MY_LLM_ACCESS" >&2'}
  - {id: echo, agent: helper, prompt: "echo ${{ print.output }} ${{ shell.output.report }}"}
`
		dir := t.TempDir()
		for name, body := range map[string]string{"agents/helper.md": helper, "f.yaml": flow} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bin := flowBinary(t)
		flow1 := func(args ...string) (string, string, error) {
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			return stdout.String(), stderr.String(), err
		}
		stdout, stderr, err := flow1("run", "f.yaml")
		if err != nil {
			t.Fatalf("flow run: %v\n%s%s", err, stdout, stderr)
		}
		if !strings.Contains(stdout, "your key is [redacted]") {
			t.Errorf("the echoed answer is not on stdout, redacted:\n%s", stdout)
		}
		noKey(t, "flow run's stdout", stdout)
		noKey(t, "flow run's stderr", stderr)
		for _, args := range [][]string{{"run", "f.yaml", "--json"}, {"show"}, {"runs", "--json"}, {"tail", "RUN", "echo"},
			{"tail", "RUN", "print"}, {"tail", "RUN", "fail"}} {
			if args[0] == "tail" {
				runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
				args[1] = runs[0]
			}
			stdout, stderr, _ := flow1(args...)
			noKey(t, "flow "+strings.Join(args, " "), stdout+stderr)
		}
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		if len(runs) != 2 {
			t.Fatalf("runs: %v", runs)
		}
		for _, run := range runs {
			keyNowhereOf(t, run, hostileKey)
		}
	})
}

func noKey(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, hostileKey) {
		t.Errorf("%s shows the key:\n%s", what, text)
	}
}

// keyNowhereOf fails the test for every file of the run that holds key,
// and if it finds no file at all.
func keyNowhereOf(t *testing.T, run, key string) {
	t.Helper()
	files := 0
	_ = filepath.WalkDir(run, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		files++
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
			t.Errorf("the key is written in %s", path)
		}
		return nil
	})
	if files < 5 {
		t.Errorf("the run %s has %d files", run, files)
	}
}

// TestHostileHugeAnswerIsBounded: an agent printing 200 MB costs flow at
// most 64 MiB more memory than one printing a line, and the answer is
// stored once, whole, in its answer file; the journal, events,
// output.json and report.html carry a bounded prefix and the file's path.
func TestHostileHugeAnswerIsBounded(t *testing.T) {
	const size = 200_000_000
	flow := `name: f
agents:
  - {name: writer, description: writes, driver: exec, command: [sh, -c, 'cat >/dev/null; head -c $0 /dev/zero | tr "\0" a', "%d"]}
nodes:
  - {id: write, agent: writer, prompt: x}
`
	bin := flowBinary(t)
	run := func(n int) (dir string, maxRSS int64, took time.Duration) {
		dir = t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(fmt.Sprintf(flow, n)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "f.yaml")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("flow run: %v\n%s", err, stderr.String())
		}
		ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			t.Skip("no rusage here")
		}
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		return runs[0], ru.Maxrss << 10, time.Since(start) // Maxrss is in KiB
	}
	_, small, _ := run(10)
	dir, big, took := run(size)
	t.Logf("peak RSS: %d MiB for a 10-byte answer, %d MiB for a %d-byte one (%v)", small>>20, big>>20, size, took)
	if big-small > 64<<20 {
		t.Errorf("a %d-byte answer took %d MiB more memory than a short one, want at most 64", size, (big-small)>>20)
	}
	// Stored once, whole; everything else bounded.
	answer := filepath.Join(dir, "home", "write", "writer-answer.md")
	if st, err := os.Stat(answer); err != nil || st.Size() != size {
		t.Fatalf("the answer file: %v, %v; want %d bytes", st, err, size)
	}
	var total int64
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			st, _ := d.Info()
			total += st.Size()
			if p != answer && st.Size() > 1<<20 {
				t.Errorf("%s is %d bytes: only the answer file may hold the answer", p, st.Size())
			}
		}
		return nil
	})
	if total > size+(4<<20) {
		t.Errorf("the run directory holds %d bytes for a %d-byte answer: it is stored more than once", total, size)
	}
	facts := journal(t, dir)
	for _, f := range facts {
		if f.Visit == "write" && f.Type == "end" && (f.File != answer || f.Size != size) {
			t.Errorf("the end fact names file %q (%d bytes), want %s (%d)", f.File, f.Size, answer, size)
		}
	}
}

// openPTY opens a pseudo-terminal: the controlling side and the terminal a
// program writes to.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	// Two ioctls the standard library has no call for; x/sys/unix has.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	return ptmx, tty
}

// TestTailEscapesOnATerminal: flow tail on a terminal shows the control
// characters an agent printed (a window title, a clipboard write, colours)
// escaped; into a pipe it gives the transcript's bytes as they are.
func TestTailEscapesOnATerminal(t *testing.T) {
	dir := t.TempDir()
	flow := `name: f
agents:
  - {name: painter, description: paints, driver: exec, command: [sh, -c, "cat >/dev/null; printf 'a\\033]0;pwned\\007b\\033]52;c;eA==\\007c\\033[31mred\\n'"]}
nodes:
  - {id: paint, agent: painter, prompt: x}
`
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	if out, err := command(bin, dir, "", "run", "f.yaml").CombinedOutput(); err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	// The live log, with the program's bytes, is the transcript tail reads.
	jsonl, _ := filepath.Glob(filepath.Join(runs[0], "home", "paint", "*.jsonl"))
	for _, f := range jsonl {
		_ = os.Remove(f)
	}

	piped, err := command(bin, dir, "", "tail", runs[0], "paint").Output()
	if err != nil || !bytes.Contains(piped, []byte("a\x1b]0;pwned\x07b")) {
		t.Errorf("flow tail into a pipe = %q, %v; want the bytes as they are", piped, err)
	}

	ptmx, tty := openPTY(t)
	cmd := command(bin, dir, "", "tail", runs[0], "paint")
	cmd.Stdout = tty
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var shown bytes.Buffer
	_, _ = io.Copy(&shown, ptmx) // ends with EIO once the terminal is closed
	if bytes.ContainsAny(shown.Bytes(), "\x1b\x07") || !strings.Contains(shown.String(), `a\x1b]0;pwned\x07b\x1b]52;c;eA==\x07c\x1b[31mred`) {
		t.Errorf("flow tail on a terminal showed %q, want the control characters escaped", shown.String())
	}
}
