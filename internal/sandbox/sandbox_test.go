package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/clitest"
)

// TestMain lets the test binary serve as the Landlock helper.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		err := Exec(os.Args[2:])
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(126)
	}
	os.Exit(m.Run())
}

// confined runs script under the sandbox of kind in dir and returns its
// output and error.
func confined(t *testing.T, kind Kind, dir, script string, env ...string) (string, error) {
	t.Helper()
	tmp := t.TempDir()
	argv := []string{"bash", "-c", script}
	switch kind {
	case Bubblewrap:
		p, why := probeBwrap()
		if why != "" {
			t.Skipf("no bubblewrap here: %s", why)
		}
		argv = Wrap(p, dir, tmp, argv)
	case Landlock:
		SetHelper(os.Args[0])
		if why := probeLandlock(); why != "" {
			if _, bwrapWhy := probeBwrap(); bwrapWhy != "" {
				clitest.Missing(t, "no sandbox here: %s; %s", why, bwrapWhy)
			}
			t.Skipf("no Landlock here: %s", why)
		}
		argv = WrapLandlock(os.Args[0], dir, tmp, argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = Env(append(os.Environ(), env...), tmp)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestConfined(t *testing.T) {
	for _, kind := range []Kind{Bubblewrap, Landlock} {
		t.Run(string(kind), func(t *testing.T) { testConfined(t, kind) })
	}
}

func testConfined(t *testing.T, kind Kind) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{work, outside, filepath.Join(work, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Run("writes in its directory and its tmp", func(t *testing.T) {
		out, err := confined(t, kind, work, `echo fixed > a.txt && echo x > "$TMPDIR/t" && cat "$TMPDIR/t"`)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(work, "a.txt")); string(b) != "fixed\n" {
			t.Errorf("a.txt holds %q", b)
		}
	})
	t.Run("cannot write outside", func(t *testing.T) {
		out, err := confined(t, kind, work, "echo pwned > "+filepath.Join(outside, "x"))
		if err == nil {
			t.Errorf("the write outside succeeded: %s", out)
		}
		if _, serr := os.Stat(filepath.Join(outside, "x")); serr == nil {
			t.Error("a file appeared outside the working directory")
		}
	})
	t.Run("git is read-only", func(t *testing.T) {
		if kind == Landlock {
			t.Skip("Landlock cannot take a right back beneath a writable directory (docs/native.md)")
		}
		out, err := confined(t, kind, work, "echo x > .git/HEAD")
		if err == nil {
			t.Errorf("the write into .git succeeded: %s", out)
		}
	})
	t.Run("no network", func(t *testing.T) {
		out, err := confined(t, kind, work, "exec 3<>/dev/tcp/127.0.0.1/"+strings.Split(ln.Addr().String(), ":")[1])
		if err == nil {
			t.Errorf("the connection to the host's 127.0.0.1 succeeded: %s", out)
		}
	})
	t.Run("no keys", func(t *testing.T) {
		out, err := confined(t, kind, work, `echo "[$OPENAI_API_KEY]"`, "OPENAI_API_KEY=sk-secret-123456")
		if err != nil || strings.TrimSpace(out) != "[]" {
			t.Errorf("the key reached the command: %q %v", out, err)
		}
	})
}
